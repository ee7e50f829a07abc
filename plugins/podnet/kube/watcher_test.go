package kube_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/kube"
	"github.com/nrinet/nrinet/plugins/podnet/masq"
)

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func mustAddr(s string) netip.Addr     { return netip.MustParseAddr(s) }

// node builds a Node with pod CIDRs and InternalIPs.
func node(name string, podCIDRs []string, internalIPs ...string) *corev1.Node {
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

// fakeAPI is client-go's fake clientset, with a signal once the
// informer's watch is in place: the fake's watch sees no event from before
// it starts, so the test changes Nodes only after.
func fakeAPI(t *testing.T, nodes ...*corev1.Node) (*fake.Clientset, <-chan struct{}) {
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n)
	}
	cs := fake.NewClientset(objs...)
	watching := make(chan struct{})
	var once sync.Once
	cs.PrependWatchReactor("nodes", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if a, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = a.ListOptions
		}
		w, err := cs.Tracker().Watch(action.GetResource(), action.GetNamespace(), opts)
		once.Do(func() { close(watching) })
		return true, w, err
	})
	return cs, watching
}

// reconciles records what OnReconcile was told.
type reconciles struct {
	mu   sync.Mutex
	errs map[string]error
	n    map[string]int
}

func (r *reconciles) hook(kind string, _ bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.errs == nil {
		r.errs, r.n = map[string]error{}, map[string]int{}
	}
	r.errs[kind] = err
	r.n[kind]++
}

func (r *reconciles) get(kind string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[kind], r.errs[kind]
}

// TestWatcher runs a Watcher against client-go's fake API server in a
// namespace standing for the node "self": it waits for its pod CIDRs,
// routes to the other Nodes as they come, change and go, keeps the
// masquerade rules (real nftables) and reports a change of its own pod
// CIDRs as not ready while serving the old ones.
func TestWatcher(t *testing.T) {
	ns, h := nodeNS(t)
	f, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := masq.New(masq.WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Uninstall()

	cs, watching := fakeAPI(t,
		node("self", nil, "198.18.100.1", "fd00:198:18:100::1"),
		node("b", []string{"198.18.2.0/24", "fd00:198:18:2::/64"}, "198.18.100.2", "fd00:198:18:100::2"),
	)
	logs := &testutil.LogBuffer{}
	rec := &reconciles{}
	r, err := kube.NewRouter(kube.WithRouterHandle(h))
	if err != nil {
		t.Fatal(err)
	}
	w, err := kube.NewWatcher(cs, "self",
		kube.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
		kube.WithRouter(r),
		kube.WithMasquerade(m, []netip.Prefix{mustPrefix("198.18.0.0/16"), mustPrefix("fd00:198:18::/56")}),
		kube.WithReconcileHook(rec.hook),
	)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := w.Ready(); ok || why == "" {
		t.Errorf("before Run: Ready() = %v, %q", ok, why)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	defer stop()
	<-watching

	waitRoutes := func(step string, want ...string) {
		t.Helper()
		slices.Sort(want)
		if err := testutil.Poll(10*time.Second, 20*time.Millisecond, func() error {
			if got := ipRoutes(t, ns); !slices.Equal(got, want) {
				return fmt.Errorf("ip route show proto 78:\n got %q\nwant %q", got, want)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	waitReady := func(step string, want bool, reason string) {
		t.Helper()
		testutil.WaitFor(t, step+": readiness", 10*time.Second, func() bool {
			ok, why := w.Ready()
			return ok == want && strings.Contains(why, reason)
		})
	}
	nodes := cs.CoreV1().Nodes()
	update := func(n *corev1.Node) {
		t.Helper()
		if _, err := nodes.Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Routes to the others do not wait for this node's pod CIDRs.
	waitRoutes("start", "198.18.2.0/24 via 198.18.100.2", "fd00:198:18:2::/64 via fd00:198:18:100::2")
	waitReady("start", false, "waiting for Node self to get spec.podCIDRs")
	early, cancelEarly := context.WithCancel(ctx)
	cancelEarly()
	if _, err := w.PodCIDRs(early); err == nil {
		t.Errorf("PodCIDRs with a cancelled context and no pod CIDRs returned no error")
	}
	if n, _ := rec.get(kube.KindMasquerade); n != 0 {
		t.Errorf("masquerade synced %d times before the pod CIDRs were known", n)
	}

	got := make(chan []netip.Prefix, 1)
	go func() {
		p, err := w.PodCIDRs(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	own := []string{"198.18.1.0/24", "fd00:198:18:1::/64"}
	update(node("self", own, "198.18.100.1", "fd00:198:18:100::1"))
	if p := <-got; fmt.Sprint(p) != "[198.18.1.0/24 fd00:198:18:1::/64]" {
		t.Errorf("PodCIDRs = %v", p)
	}
	waitReady("pod CIDRs known", true, "serving pod CIDRs [198.18.1.0/24 fd00:198:18:1::/64]")
	testutil.WaitFor(t, "masquerade rules", 10*time.Second, func() bool {
		c, ok, _ := m.Rules()
		return ok && len(c) == 4 && strings.Contains(c[2], "198.18.1.0/24")
	})

	// Nodes come, change and go.
	if _, err := nodes.Create(ctx, node("c", []string{"198.18.3.0/24"}, "198.18.100.3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRoutes("node c added", "198.18.2.0/24 via 198.18.100.2", "fd00:198:18:2::/64 via fd00:198:18:100::2", "198.18.3.0/24 via 198.18.100.3")
	update(node("b", []string{"198.18.2.0/24", "fd00:198:18:2::/64"}, "198.18.100.22", "fd00:198:18:100::22"))
	waitRoutes("node b moved", "198.18.2.0/24 via 198.18.100.22", "fd00:198:18:2::/64 via fd00:198:18:100::22", "198.18.3.0/24 via 198.18.100.3")
	if err := nodes.Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRoutes("node c deleted", "198.18.2.0/24 via 198.18.100.22", "fd00:198:18:2::/64 via fd00:198:18:100::22")
	// A Node claiming this node's range gets no route.
	if _, err := nodes.Create(ctx, node("d", []string{"198.18.1.0/24"}, "198.18.100.4"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the overlap logged", 10*time.Second, func() bool {
		return strings.Contains(logs.String(), "Node d: pod CIDR 198.18.1.0/24 overlaps this node's pod CIDR 198.18.1.0/24")
	})
	waitRoutes("node d overlapping", "198.18.2.0/24 via 198.18.100.22", "fd00:198:18:2::/64 via fd00:198:18:100::22")

	// This node's pod CIDRs change: the old ones stay in use, not ready.
	update(node("self", []string{"198.18.5.0/24", "fd00:198:18:5::/64"}, "198.18.100.1", "fd00:198:18:100::1"))
	waitReady("pod CIDRs changed", false,
		"the pod CIDRs of Node self changed from [198.18.1.0/24 fd00:198:18:1::/64] to [198.18.5.0/24 fd00:198:18:5::/64]; nri-podnet keeps serving [198.18.1.0/24 fd00:198:18:1::/64]")
	if !strings.Contains(logs.String(), "level=ERROR msg=\"not ready\"") ||
		!strings.Contains(logs.String(), "changed from [198.18.1.0/24 fd00:198:18:1::/64] to [198.18.5.0/24 fd00:198:18:5::/64]") {
		t.Errorf("the change was not logged as an error naming both values:\n%s", logs.String())
	}
	if p, _ := w.PodCIDRs(ctx); fmt.Sprint(p) != "[198.18.1.0/24 fd00:198:18:1::/64]" {
		t.Errorf("after the change PodCIDRs = %v, want the ones in use", p)
	}
	if c, _, _ := m.Rules(); len(c) != 4 || !strings.Contains(c[2], "198.18.1.0/24") {
		t.Errorf("after the change the masquerade is %q, want the pod CIDRs in use", c)
	}
	// ... and the Node that claimed the old range still gets no route,
	// while one claiming the new range gets none either.
	waitRoutes("after the change", "198.18.2.0/24 via 198.18.100.22", "fd00:198:18:2::/64 via fd00:198:18:100::22")
	// Back to the pod CIDRs in use: ready again.
	update(node("self", own, "198.18.100.1", "fd00:198:18:100::1"))
	waitReady("pod CIDRs back", true, "serving")
	if strings.Contains(logs.String(), "routes to other nodes left out") == false {
		t.Errorf("skipped routes were not logged")
	}
	if n, err := rec.get(kube.KindRoutes); n == 0 || err != nil {
		t.Errorf("OnReconcile(routes): %d calls, last error %v", n, err)
	}

	// Stopping leaves routes and masquerade in place.
	stop()
	waitRoutes("after Run returned", "198.18.2.0/24 via 198.18.100.22", "fd00:198:18:2::/64 via fd00:198:18:100::22")
	if _, ok, _ := m.Rules(); !ok {
		t.Errorf("the masquerade table went with Run")
	}
}

func TestNewWatcherErrors(t *testing.T) {
	cs := fake.NewClientset()
	for _, tc := range []struct {
		name   string
		client *fake.Clientset
		node   string
		want   string
	}{
		{"no node name", cs, "", "no node name"},
		{"no client", nil, "self", "no Kubernetes client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.client == nil {
				_, err = kube.NewWatcher(nil, tc.node)
			} else {
				_, err = kube.NewWatcher(tc.client, tc.node)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRunTwice(t *testing.T) {
	cs, watching := fakeAPI(t)
	w, err := kube.NewWatcher(cs, "self")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-watching
	if err := w.Run(ctx); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("second Run: %v", err)
	}
	testutil.WaitFor(t, "readiness", 10*time.Second, func() bool {
		_, why := w.Ready()
		return strings.Contains(why, "waiting for Node self to exist")
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
