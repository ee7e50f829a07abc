package cri_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/cri"
	"github.com/nrinet/nrinet/internal/testutil"
)

// sandboxNamespaces lists the nrinet-* network namespaces.
func sandboxNamespaces() []string { return testutil.NetNSNames("nrinet-*") }

// newNamespaces returns those of this test's failed sandboxes: new since
// before and still there (testutil.LeakedNetNS).
func newNamespaces(before []string) []string {
	return testutil.LeakedNetNS("nrinet-*", before, testutil.ForeignNetNSGrace)
}

func networkCondition(t *testing.T, e *env) *criapi.RuntimeCondition {
	t.Helper()
	rsp, err := e.client.Status(context.Background(), &criapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rsp.GetStatus().GetConditions() {
		if c.GetType() == criapi.NetworkReady {
			return c
		}
	}
	t.Fatalf("no NetworkReady condition in %v", rsp.GetStatus())
	return nil
}

func TestRunPodSandbox_RequiredPluginMissing(t *testing.T) {
	e := newEnv(t, envConfig{required: []string{"counter"}})
	ctx := context.Background()
	const reason = `required network plugin "counter" not connected`
	if c := networkCondition(t, e); c.GetStatus() || c.GetReason() != cri.NetworkNotReadyReason || !strings.Contains(c.GetMessage(), reason) {
		t.Errorf("NetworkReady = %v, want false with %q", c, reason)
	}
	before := sandboxNamespaces()
	cfg := podConfig(1, false)
	_, err := e.client.RunPodSandbox(ctx, &criapi.RunPodSandboxRequest{Config: cfg})
	wantCode(t, err, codes.Unavailable, "RunPodSandbox without the required plugin")
	if !strings.Contains(status.Convert(err).Message(), reason) {
		t.Errorf("error %v does not give the reason %q", err, reason)
	}
	if got := e.list(nil); len(got) != 0 {
		t.Errorf("ListPodSandbox = %v after a failed RunPodSandbox", got)
	}
	if leaked := newNamespaces(before); len(leaked) != 0 {
		t.Errorf("network namespaces leaked: %v", leaked)
	}
	// Host-network pods need no network plugin.
	e.removePod(e.run(podConfig(2, true)))

	t.Run("retry once the plugin joined, which gives no address", func(t *testing.T) {
		testutil.SkipUnlessRoot(t)
		e.startCounter(&counter{})
		if c := networkCondition(t, e); !c.GetStatus() {
			t.Fatalf("NetworkReady = %v after the plugin joined", c)
		}
		// The name was released; but a required network plugin must
		// give the pod an address, and the counter gives none.
		_, err := e.client.RunPodSandbox(ctx, &criapi.RunPodSandboxRequest{Config: cfg})
		wantCode(t, err, codes.FailedPrecondition, "RunPodSandbox with a required plugin that gives no address")
		if want := `required network plugin "counter" gave it none`; !strings.Contains(status.Convert(err).Message(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
		if got := e.list(nil); len(got) != 0 {
			t.Errorf("ListPodSandbox = %v after a pod without an address", got)
		}
		if leaked := newNamespaces(before); len(leaked) != 0 {
			t.Errorf("network namespaces leaked: %v", leaked)
		}
	})
}

func TestRunPodSandbox_HookFailureUndoesEverything(t *testing.T) {
	e := newEnv(t, envConfig{podnet: true, required: []string{"podnet"}})
	c := &counter{FailRuns: 1}
	e.startCounter(c)
	ctx := context.Background()
	before := sandboxNamespaces()
	cfg := podConfig(1, false)

	_, err := e.client.RunPodSandbox(ctx, &criapi.RunPodSandboxRequest{Config: cfg})
	if err == nil || !strings.Contains(err.Error(), `plugin "20-counter": RunPodSandbox: counter: refusing the pod as told`) {
		t.Fatalf("RunPodSandbox error = %v, want the plugin's", err)
	}
	if got := e.list(nil); len(got) != 0 {
		t.Errorf("ListPodSandbox = %v after a failed RunPodSandbox", got)
	}
	if leaked := newNamespaces(before); len(leaked) != 0 {
		t.Errorf("network namespaces leaked: %v", leaked)
	}
	// nri-podnet, which had succeeded, was told to stop: veth gone.
	testutil.WaitFor(t, "the failed pod's veth to go", 5*time.Second, func() bool { return len(e.bridgePorts()) == 0 })
	if n := e.metric("nrinet_nrinetd_nri_hook_errors_total", map[string]string{"event": "RunPodSandbox"}); n != 1 {
		t.Errorf("hook errors = %v, want 1", n)
	}

	// The same configuration succeeds now.
	id := e.run(cfg)
	checkDualStack(t, ips(e.status(id, false).GetStatus()))
	if got := e.bridgePorts(); len(got) != 1 {
		t.Errorf("bridge ports = %v, want the one pod's", got)
	}
	e.removePod(id)
}

func TestStopPodSandbox_SendsNRIStopOnce(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	e := newEnv(t, envConfig{})
	c := &counter{}
	e.startCounter(c)
	id := e.run(podConfig(1, false))

	e.stopPod(id)
	e.stopPod(id)
	if n := c.Count("StopPodSandbox", id); n != 1 {
		t.Errorf("NRI StopPodSandbox sent %d times, want once", n)
	}
	hadNetNS := c.NetNSAtStop(id)
	if !hadNetNS {
		t.Error("the network namespace was gone when NRI StopPodSandbox arrived")
	}
	if exists(netnsPath(id)) {
		t.Errorf("network namespace %s still exists after stop", netnsPath(id))
	}

	// The fact survives a restart.
	e.restart()
	e.startCounter(c)
	e.stopPod(id)
	e.removePod(id)
	e.removePod(id)
	if s, r := c.Count("StopPodSandbox", id), c.Count("RemovePodSandbox", id); s != 1 || r != 1 {
		t.Errorf("NRI StopPodSandbox sent %d times, RemovePodSandbox %d times; want once each", s, r)
	}

	// Removing a READY sandbox stops it first.
	id2 := e.run(podConfig(2, false))
	e.removePod(id2)
	if s, r := c.Count("StopPodSandbox", id2), c.Count("RemovePodSandbox", id2); s != 1 || r != 1 {
		t.Errorf("remove of a ready sandbox: NRI StopPodSandbox sent %d times, RemovePodSandbox %d times", s, r)
	}
	if exists(netnsPath(id2)) {
		t.Errorf("network namespace %s still exists after remove", netnsPath(id2))
	}
}

func TestUnknownIDs(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	const id = "0123456789abcdef"
	e.stopPod(id)
	e.removePod(id)
	_, err := e.client.PodSandboxStatus(ctx, &criapi.PodSandboxStatusRequest{PodSandboxId: id})
	wantCode(t, err, codes.NotFound, "PodSandboxStatus of an unknown ID")
	_, err = e.client.PodSandboxStatus(ctx, &criapi.PodSandboxStatusRequest{})
	wantCode(t, err, codes.InvalidArgument, "PodSandboxStatus of an empty ID")
	if got := e.list(&criapi.PodSandboxFilter{Id: id}); len(got) != 0 {
		t.Errorf("ListPodSandbox(unknown ID) = %v", got)
	}
}

func TestRunPodSandbox_InvalidRequests(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  *criapi.RunPodSandboxRequest
		want string
	}{
		{"no config", &criapi.RunPodSandboxRequest{}, "config.metadata is missing"},
		{"no name", &criapi.RunPodSandboxRequest{Config: &criapi.PodSandboxConfig{Metadata: &criapi.PodSandboxMetadata{Namespace: "ns", Uid: "u"}}}, "config.metadata.name is empty"},
		{"no namespace", &criapi.RunPodSandboxRequest{Config: &criapi.PodSandboxConfig{Metadata: &criapi.PodSandboxMetadata{Name: "n", Uid: "u"}}}, `namespace of pod "n" is empty`},
		{"no uid", &criapi.RunPodSandboxRequest{Config: &criapi.PodSandboxConfig{Metadata: &criapi.PodSandboxMetadata{Name: "n", Namespace: "ns"}}}, "uid of pod ns/n is empty"},
		{"handler", &criapi.RunPodSandboxRequest{Config: podConfig(1, true), RuntimeHandler: "kata"}, `unknown runtime handler "kata"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.RunPodSandbox(ctx, tc.req)
			wantCode(t, err, codes.InvalidArgument, "RunPodSandbox")
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v does not say %q", err, tc.want)
			}
		})
	}
}

func TestVersionStatusAndEmptyAnswers(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := context.Background()
	v, err := e.client.Version(ctx, &criapi.VersionRequest{})
	if err != nil || v.GetVersion() != "0.1.0" || v.GetRuntimeName() != "nrinetd" || v.GetRuntimeVersion() != "0.0.0-test" || v.GetRuntimeApiVersion() != "v1" {
		t.Errorf("Version = %v, %v", v, err)
	}
	st, err := e.client.Status(ctx, &criapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.GetStatus().GetConditions() {
		if !c.GetStatus() {
			t.Errorf("condition %v is false without required plugins", c)
		}
	}
	if nri := st.GetInfo()["nri"]; !strings.HasPrefix(nri, "{") || !strings.Contains(nri, `"networkReady":true`) {
		t.Errorf("verbose Status info nri = %q", nri)
	}

	fs, err := e.images.ImageFsInfo(ctx, &criapi.ImageFsInfoRequest{})
	if err != nil || len(fs.GetImageFilesystems()) != 1 {
		t.Fatalf("ImageFsInfo = %v, %v", fs, err)
	}
	if f := fs.GetImageFilesystems()[0]; f.GetFsId().GetMountpoint() != e.dir || f.GetUsedBytes().GetValue() == 0 || f.GetTimestamp() <= 0 {
		t.Errorf("ImageFsInfo = %v", f)
	}
	if r, err := e.client.ListContainers(ctx, &criapi.ListContainersRequest{}); err != nil || len(r.GetContainers()) != 0 {
		t.Errorf("ListContainers = %v, %v", r, err)
	}
	if r, err := e.client.ListPodSandboxStats(ctx, &criapi.ListPodSandboxStatsRequest{}); err != nil || len(r.GetStats()) != 0 {
		t.Errorf("ListPodSandboxStats = %v, %v", r, err)
	}
	if r, err := e.images.ListImages(ctx, &criapi.ListImagesRequest{}); err != nil || len(r.GetImages()) != 0 {
		t.Errorf("ListImages = %v, %v", r, err)
	}
	if r, err := e.images.ImageStatus(ctx, &criapi.ImageStatusRequest{Image: &criapi.ImageSpec{Image: "pause"}}); err != nil || r.GetImage() != nil {
		t.Errorf("ImageStatus = %v, %v", r, err)
	}
	_, err = e.client.CreateContainer(ctx, &criapi.CreateContainerRequest{})
	wantCode(t, err, codes.Unimplemented, "CreateContainer")
	_, err = e.images.PullImage(ctx, &criapi.PullImageRequest{})
	wantCode(t, err, codes.Unimplemented, "PullImage")
	if n := e.metric("nrinet_nrinetd_cri_requests_total", map[string]string{"method": "CreateContainer", "code": "Unimplemented"}); n != 1 {
		t.Errorf("requests metric for CreateContainer = %v", n)
	}
}
