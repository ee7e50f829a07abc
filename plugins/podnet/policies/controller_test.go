package policies_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	prometheustestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	nrtest "github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
	"github.com/nrinet/nrinet/plugins/podnet/policies"
)

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newEnforcer is a real Enforcer in a fresh network namespace, with
// opts.
func newEnforcer(t *testing.T, opts ...netpol.Option) *netpol.Enforcer {
	t.Helper()
	nrtest.SkipUnlessRoot(t)
	f, err := os.Open(nrtest.NewNetNS(t, "nrpc"+randHex(4)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	e, err := netpol.New(append([]netpol.Option{netpol.WithNetNS(int(f.Fd()))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// comments are the table's rule comments naming pod.
func comments(t *testing.T, e *netpol.Enforcer, pod string) []string {
	t.Helper()
	rules, err := e.Rules()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rules {
		if strings.Contains(r.Comment, "pod="+pod+" ") {
			out = append(out, r.Comment)
		}
	}
	return out
}

func TestController(t *testing.T) {
	e := newEnforcer(t)
	denyAll := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "deny-db"},
		Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	}
	client := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}},
		denyAll,
		// The API's view of the local pod: newer labels than the sandbox's.
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "db-0", UID: "uid-db", Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "sql", ContainerPort: 5432}}}}}},
	)
	reg := prometheus.NewRegistry()
	m, err := policies.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := policies.New(client, "n1", e, policies.WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	db := podnet.PolicyPod{ID: "sb-db", Namespace: "prod", Name: "db-0", UID: "uid-db",
		Labels: map[string]string{"app": "old", "io.kubernetes.pod.name": "db-0"}, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.3")}}
	if err := c.SetPod(t.Context(), db); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("SetPod before Run = %v, want an error saying the controller is not running", err)
	}
	if ok, why := c.Ready(); ok {
		t.Errorf("Ready before Run: %v %s", ok, why)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	wctx, wcancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer wcancel()
	if err := c.WaitSynced(wctx); err != nil {
		t.Fatal(err)
	}
	// The rejected SetPod above told the pods (one), so the first sync
	// wrote the table.
	if ok, why := c.Ready(); !ok {
		t.Errorf("not Ready after the first sync: %s", why)
	}

	// The pod is covered when SetPod returns: selected through the API's
	// labels (the sandbox's say app=old).
	if err := c.SetPod(wctx, db); err != nil {
		t.Fatal(err)
	}
	if ok, why := c.Ready(); !ok {
		t.Errorf("not Ready after the first write: %s", why)
	}
	if got := comments(t, e, "prod/db-0"); len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), "denied (policies prod/deny-db)") {
		t.Errorf("after SetPod, the table's rules for prod/db-0: %q; want its default deny of prod/deny-db", got)
	}

	if n, err := prometheustestutil.GatherAndCount(reg, "nrinet_podnet_netpol_rules"); err != nil || n != 1 {
		t.Errorf("nrinet_podnet_netpol_rules: %d series, %v", n, err)
	}

	// The policy deleted in the API: its rules go.
	if err := client.NetworkingV1().NetworkPolicies("prod").Delete(wctx, "deny-db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nrtest.WaitFor(t, "the rules of prod/db-0 gone with its policy", 10*time.Second, func() bool { return len(comments(t, e, "prod/db-0")) == 0 })

	// Back, then the pod removed: its rules go too.
	if _, err := client.NetworkingV1().NetworkPolicies("prod").Create(wctx, denyAll, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nrtest.WaitFor(t, "the rules of prod/db-0 back with its policy", 10*time.Second, func() bool { return len(comments(t, e, "prod/db-0")) > 0 })
	c.RemovePod("sb-db")
	nrtest.WaitFor(t, "the rules of prod/db-0 gone with the pod", 10*time.Second, func() bool { return len(comments(t, e, "prod/db-0")) == 0 })
}

// TestController_KeepsTheTableUntilThePodsAreKnown: a restarted
// controller writes nothing before the runtime's pods are known, so the
// table the previous nri-podnet left keeps enforcing; SyncPods then
// writes the table for the pods the runtime has.
func TestController_KeepsTheTableUntilThePodsAreKnown(t *testing.T) {
	e := newEnforcer(t)
	deny := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "deny"},
		Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{}},
	}
	db := podnet.PolicyPod{ID: "sb-db", Namespace: "prod", Name: "db-0", UID: "uid-db", IPs: []netip.Addr{netip.MustParseAddr("198.18.0.3")}}
	// What the previous nri-podnet wrote.
	prev, err := netpol.Compile([]*networkingv1.NetworkPolicy{deny}, nil, []netpol.Pod{{Namespace: "prod", Name: "db-0", IPs: db.IPs, Local: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sync(prev); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}, deny)
	c, err := policies.New(client, "n1", e)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	if err := c.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if got := comments(t, e, "prod/db-0"); len(got) == 0 {
		t.Errorf("after the first sync, before the pods are known, the previous table's rules for prod/db-0 are gone")
	}
	// Synced (nri-podnet may join the runtime), but not ready: the table
	// is not yet this controller's.
	if ok, why := c.Ready(); ok || !strings.Contains(why, "runtime's pods") {
		t.Errorf("Ready before the pods are known: %v %q; want false, waiting for the runtime's pods", ok, why)
	}
	if err := c.SyncPods(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if ok, why := c.Ready(); !ok {
		t.Errorf("not Ready after the table was written: %s", why)
	}
	if got := comments(t, e, "prod/db-0"); len(got) != 0 {
		t.Errorf("after SyncPods without the pod, its rules are still there: %q", got)
	}
}
