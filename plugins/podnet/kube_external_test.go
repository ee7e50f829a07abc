package podnet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/masq"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// inNetNS runs fn on a thread in the namespace at path; sockets it opens
// stay there.
func inNetNS(t *testing.T, path string, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	target, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		t.Fatal(err)
	}
	fn()
	if err := netns.Set(orig); err != nil {
		panic("cannot return the thread to its namespace: " + err.Error())
	}
}

// nodeAPI serves the lists and watches of client-go's fake clientset
// over HTTP, JSON, of what nri-podnet's informers use: Nodes, and
// NetworkPolicies, Namespaces and Pods (its NetworkPolicy engine).
// watching is closed when the first watch of Nodes is in place (the
// fake's watch sees no change made before it starts).
//
// A watch with sendInitialEvents=true is a streaming list, as
// kube-apiserver serves it: the objects there as ADDED events, then a
// BOOKMARK annotated k8s.io/initial-events-end, then the changes.
// client-go's informers list that way by default since v0.35 (its
// WatchListClient feature), and wait for that bookmark.
type nodeAPI struct {
	cs       *fake.Clientset
	watching chan struct{}
	once     sync.Once
}

// apiResources are the resources nodeAPI serves, by path.
var apiResources = map[string]struct {
	gvr  schema.GroupVersionResource
	kind string
}{
	"/api/v1/nodes":      {corev1.SchemeGroupVersion.WithResource("nodes"), "Node"},
	"/api/v1/namespaces": {corev1.SchemeGroupVersion.WithResource("namespaces"), "Namespace"},
	"/api/v1/pods":       {corev1.SchemeGroupVersion.WithResource("pods"), "Pod"},
	"/apis/networking.k8s.io/v1/networkpolicies": {networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), "NetworkPolicy"},
}

func (a *nodeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res, ok := apiResources[r.URL.Path]
	if !ok || r.Method != http.MethodGet {
		http.Error(w, "not served by this test", http.StatusNotFound)
		return
	}
	gv := res.gvr.GroupVersion()
	w.Header().Set("Content-Type", "application/json")
	if q := r.URL.Query().Get("watch"); q != "true" && q != "1" {
		obj, err := a.cs.Tracker().List(res.gvr, gv.WithKind(res.kind), "")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		obj.GetObjectKind().SetGroupVersionKind(gv.WithKind(res.kind + "List"))
		json.NewEncoder(w).Encode(obj)
		return
	}
	wi, err := a.cs.Tracker().Watch(res.gvr, "")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer wi.Stop()
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	if res.kind == "Node" {
		a.once.Do(func() { close(a.watching) })
	}
	enc := json.NewEncoder(w)
	if r.URL.Query().Get("sendInitialEvents") == "true" {
		// The watch is open first, so that nothing made meanwhile is
		// missed (an object made in between comes twice: an ADDED the
		// informer takes as an update).
		obj, err := a.cs.Tracker().List(res.gvr, gv.WithKind(res.kind), "")
		if err != nil {
			enc.Encode(map[string]any{"type": watch.Error, "object": apierrors.NewInternalError(err).Status()})
			return
		}
		items, err := meta.ExtractList(obj)
		if err != nil {
			enc.Encode(map[string]any{"type": watch.Error, "object": apierrors.NewInternalError(err).Status()})
			return
		}
		for _, o := range items {
			o = o.DeepCopyObject()
			o.GetObjectKind().SetGroupVersionKind(gv.WithKind(res.kind))
			enc.Encode(map[string]any{"type": watch.Added, "object": o})
		}
		enc.Encode(map[string]any{"type": watch.Bookmark, "object": &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: gv.String(), Kind: res.kind},
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}},
		}})
		w.(http.Flusher).Flush()
	}
	for {
		select {
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			o := ev.Object.DeepCopyObject()
			o.GetObjectKind().SetGroupVersionKind(gv.WithKind(res.kind))
			enc.Encode(map[string]any{"type": ev.Type, "object": o})
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// nsGet gets url from inside the network namespace at path and returns
// the status code and the body.
func nsGet(t *testing.T, path, url string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			inNetNS(t, path, func() { c, err = (&net.Dialer{}).DialContext(ctx, network, addr) })
			return c, err
		},
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s in %s: %v", url, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// kubeNode builds a Node with pod CIDRs and InternalIPs.
func kubeNode(name string, podCIDRs []string, internalIPs ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Spec.PodCIDRs = podCIDRs
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR = podCIDRs[0]
	}
	for _, ip := range internalIPs {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	return n
}

// TestNRIPodnet_Kube runs nri-podnet -kube in a network namespace standing
// for a node, against an API server holding Nodes, and a runtime: it
// routes to the other node at once, waits unconnected (NetworkReady false)
// until its Node has pod CIDRs, then joins and gives pods addresses from
// them, with the masquerade and forwarding on, counted in its metrics; a
// change of its Node's pod CIDRs fails /readyz; SIGTERM leaves routes and
// masquerade; -uninstall removes them and the bridge, and nothing else.
func TestNRIPodnet_Kube(t *testing.T) {
	e := newExtEnv(t)
	nodeNS := "nrkn" + randHex(4)
	nodePath := testutil.NewNetNS(t, nodeNS)
	ipn := func(args ...string) string {
		t.Helper()
		return testutil.Run(t, "ip", append([]string{"-n", nodeNS}, args...)...)
	}
	ipn("link", "set", "lo", "up")
	ipn("link", "add", "underlay", "type", "veth", "peer", "name", "underlay-peer")
	ipn("link", "set", "underlay-peer", "up")
	ipn("addr", "add", "198.18.200.1/24", "dev", "underlay")
	ipn("addr", "add", "fd00:198:18:ff00::1/64", "dev", "underlay", "nodad")
	ipn("link", "set", "underlay", "up")
	ipn("route", "add", "198.18.201.0/24", "via", "198.18.200.9", "proto", "static") // someone else's
	for _, p := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"} {
		testutil.Run(t, "ip", "netns", "exec", nodeNS, "sh", "-c", "echo 0 > "+p)
	}

	x := 1 + int(randHex(1)[0])%90
	own := []string{fmt.Sprintf("198.18.%d.0/24", x), fmt.Sprintf("fd00:198:18:%x::/64", x)}
	peer := []string{fmt.Sprintf("198.18.%d.0/24", 100+x), fmt.Sprintf("fd00:198:18:%x::/64", 0x100+x)}
	api := &nodeAPI{
		cs: fake.NewClientset(
			kubeNode("self", nil, "198.18.200.1"),
			kubeNode("peer", peer, "198.18.200.2", "fd00:198:18:ff00::2"),
		),
		watching: make(chan struct{}),
	}
	var l net.Listener
	var err error
	inNetNS(t, nodePath, func() { l, err = net.Listen("tcp", "127.0.0.1:0") })
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	kubeconfig := filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "http://%s"}}]
users: [{name: test, user: {}}]
contexts: [{name: test, context: {cluster: test, user: test}}]
current-context: test
`, l.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	// Bridge, MTU and state from the file; subnets from the Node.
	e.cfg.Bridge = "nrkx" + randHex(4)
	if err := os.WriteFile(e.cfgFile, []byte(fmt.Sprintf(`{"bridge": %q, "mtu": 1400, "stateDir": %q}`, e.cfg.Bridge, e.cfg.StateDir)), 0o600); err != nil {
		t.Fatal(err)
	}

	e.startRuntime()
	p := &pluginProc{logs: &logBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command("ip", "netns", "exec", nodeNS, binary, "-kube", "-kubeconfig", kubeconfig, "-node-name", "self",
		"-cluster-cidr", "198.18.0.0/16,fd00:198:18::/52", "-config", e.cfgFile, "-socket", e.sock, "-verbose",
		"-http-address", "127.0.0.1:0")
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill() })
	e.proc = p

	routes := func() []string {
		var out []string
		for _, fam := range []string{"-4", "-6"} {
			for _, l := range strings.Split(strings.TrimSpace(ipn(fam, "route", "show", "proto", "78")), "\n") {
				if f := strings.Fields(l); len(f) >= 3 {
					out = append(out, strings.Join(f[:3], " "))
				}
			}
		}
		return out
	}
	wantRoutes := []string{peer[0] + " via 198.18.200.2", peer[1] + " via fd00:198:18:ff00::2"}
	testutil.WaitFor(t, "the routes to the peer node", 20*time.Second, func() bool { return slices.Equal(routes(), wantRoutes) })
	testutil.WaitFor(t, "nri-podnet to say why it waits", 10*time.Second, func() bool {
		return strings.Contains(p.logs.String(), "waiting for Node self to get spec.podCIDRs")
	})
	<-api.watching
	if ready, _ := e.rt.NetworkReady(); ready || len(e.rt.Plugins()) != 0 {
		t.Fatalf("while the Node has no pod CIDRs: NetworkReady %v, plugins %v; want not ready, none", ready, e.rt.Plugins())
	}
	base := "http://" + testutil.LoggedAddress(t, p.logs, "serving /healthz, /readyz and /metrics", 20*time.Second, p.exited)
	want := func(step, path string, code int, has ...string) {
		t.Helper()
		got, body := nsGet(t, nodePath, base+path)
		if got != code {
			t.Errorf("%s: GET %s = %d %q, want %d", step, path, got, body, code)
		}
		for _, h := range has {
			if !strings.Contains(body, h) {
				t.Errorf("%s: GET %s: body does not contain %q:\n%s", step, path, h, body)
			}
		}
	}
	want("waiting", "/healthz", 200, "ok")
	want("waiting", "/readyz", 503, "not connected to the runtime yet; waiting for Node self to get spec.podCIDRs")

	if _, err := api.cs.CoreV1().Nodes().Update(context.Background(), kubeNode("self", own, "198.18.200.1"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitJoined("after the pod CIDRs were set")
	_, _, rec := e.runPod(1)
	ips := rec.GetNetwork().GetIps()
	if len(ips) != 2 || !netip.MustParsePrefix(own[0]).Contains(netip.MustParseAddr(ips[0])) || !netip.MustParsePrefix(own[1]).Contains(netip.MustParseAddr(ips[1])) {
		t.Errorf("pod addresses %v, want one of each of %v", ips, own)
	}
	ns, err := os.Open(nodePath)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	// The NetworkPolicy engine synced before the plugin joined: its table
	// is there (no policy: its forward chain only).
	pe, err := netpol.New(netpol.WithNetNS(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	if rules, err := pe.Rules(); err != nil || len(rules) == 0 || rules[0].Chain != netpol.ChainForward {
		t.Errorf("the NetworkPolicy table's rules: %v, %v; want its forward chain", rules, err)
	}
	m, err := masq.New(masq.WithNetNS(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the masquerade rules", 10*time.Second, func() bool {
		c, ok, _ := m.Rules()
		return ok && len(c) == 4 && strings.Contains(c[2], own[0])
	})
	for _, s := range []string{"net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding"} {
		if got := strings.TrimSpace(testutil.Run(t, "ip", "netns", "exec", nodeNS, "sysctl", "-n", s)); got != "1" {
			t.Errorf("%s = %s in the node namespace, want 1", s, got)
		}
	}
	testutil.WaitFor(t, "/readyz to say ready", 20*time.Second, func() bool { code, _ := nsGet(t, nodePath, base+"/readyz"); return code == 200 })
	_, metrics := nsGet(t, nodePath, base+"/metrics")
	for _, kind := range []string{"routes", "masquerade"} {
		if !strings.Contains(metrics, `nrinet_podnet_reconciles_total{kind="`+kind+`"}`) || strings.Contains(metrics, `nrinet_podnet_reconciles_total{kind="`+kind+`"} 0`+"\n") {
			t.Errorf("/metrics counts no reconcile of kind %s:\n%s", kind, metrics)
		}
	}

	// The Node's pod CIDRs change: still serving the old ones, not ready.
	moved := []string{fmt.Sprintf("198.19.%d.0/24", x), fmt.Sprintf("fd00:198:18:%x::/64", 0x200+x)}
	if _, err := api.cs.CoreV1().Nodes().Update(context.Background(), kubeNode("self", moved, "198.18.200.1"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "/readyz to say not ready", 20*time.Second, func() bool { code, _ := nsGet(t, nodePath, base+"/readyz"); return code == 503 })
	want("pod CIDRs changed", "/readyz", 503, fmt.Sprintf("the pod CIDRs of Node self changed from %v to %v", own, moved))
	_, _, rec2 := e.runPod(2)
	if ip := rec2.GetNetwork().GetIps()[0]; !netip.MustParsePrefix(own[0]).Contains(netip.MustParseAddr(ip)) {
		t.Errorf("a pod started after the change got %s, want an address of %s, the pod CIDR in use", ip, own[0])
	}

	// SIGTERM: routes and masquerade stay, for the pods.
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	if p.err != nil {
		t.Errorf("nri-podnet after SIGTERM: %v\n%s", p.err, p.logs)
	}
	if got := routes(); !slices.Equal(got, wantRoutes) {
		t.Errorf("after SIGTERM the routes are %q, want %q", got, wantRoutes)
	}
	if _, ok, _ := m.Rules(); !ok {
		t.Errorf("after SIGTERM the masquerade table is gone")
	}

	out, err := exec.Command("ip", "netns", "exec", nodeNS, binary, "-uninstall", "-config", e.cfgFile).CombinedOutput()
	if err != nil {
		t.Fatalf("nri-podnet -uninstall: %v\n%s", err, out)
	}
	if got := routes(); len(got) != 0 {
		t.Errorf("after -uninstall the routes are %q", got)
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	if tables, err := c.ListTables(); err != nil || len(tables) != 0 {
		t.Errorf("after -uninstall the node has nftables tables %v (%v)", tables, err)
	}
	if exec.Command("ip", "-n", nodeNS, "link", "show", "dev", e.cfg.Bridge).Run() == nil {
		t.Errorf("after -uninstall bridge %s is still there", e.cfg.Bridge)
	}
	if got := ipn("route", "show", "proto", "static"); !strings.Contains(got, "198.18.201.0/24 via 198.18.200.9") {
		t.Errorf("-uninstall took someone else's route: %q", got)
	}
}
