package dra_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/nrinet/nrinet/internal/testutil"
)

// The driver as the kubelet sees it: NodePrepareResources and
// NodeUnprepareResources over the helper's gRPC socket, and the node's
// ResourceSlice with one device per network.
func TestDriver_kubeletSocket(t *testing.T) {
	dir := t.TempDir()
	ok := claim("grpc-ok", "node1", []string{"p1"}, [2]string{"a", "blue"})
	bad := claim("grpc-bad", "node1", []string{"p1"}, [2]string{"a", "red"})
	d, cs := newDriver(t, filepath.Join(dir, "state"), ok, bad)
	// The slice's owner, as the kubelet's node.
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "node1-uid"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plugins := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugins, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, kubeletplugin.PluginDataDirectoryPath(plugins), kubeletplugin.RegistrarDirectoryPath(dir)); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()

	conn, err := grpc.NewClient("unix://"+filepath.Join(plugins, "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kubelet := drapb.NewDRAPluginClient(conn)
	resp, err := kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{
		{Namespace: "ns1", Name: "grpc-ok", Uid: string(ok.UID)},
		{Namespace: "ns1", Name: "grpc-bad", Uid: string(bad.UID)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.GetClaims()[string(ok.UID)]; r.GetError() != "" || len(r.GetDevices()) != 1 || r.GetDevices()[0].GetDeviceName() != "blue" {
		t.Errorf("grpc-ok: %v", r)
	}
	if r := resp.GetClaims()[string(bad.UID)]; !strings.Contains(r.GetError(), `no network "red" on this node`) {
		t.Errorf("grpc-bad: %v; want an error naming the network", r)
	}
	if reqs, _ := d.Requests(ctx, pod("p1")); len(reqs) != 1 || reqs[0].Network != "blue" {
		t.Errorf("Requests(p1) = %v; want blue", reqs)
	}
	if _, err := kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: "ns1", Name: "grpc-ok", Uid: string(ok.UID)}}}); err != nil {
		t.Fatal(err)
	}
	if reqs, _ := d.Requests(ctx, pod("p1")); len(reqs) != 0 {
		t.Errorf("after unprepare: %v", reqs)
	}

	var slices []resourceapi.ResourceSlice
	testutil.WaitFor(t, "the ResourceSlice", 20*time.Second, func() bool {
		l, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		slices = l.Items
		return len(slices) == 1
	})
	s := slices[0].Spec
	if s.Driver != "podnet.nrinet.io" || s.Pool.Name != "node1" || s.NodeName == nil || *s.NodeName != "node1" || len(s.Devices) != 3 {
		t.Errorf("ResourceSlice %+v", s)
	}
}
