package policies_test

import (
	"context"
	"net/netip"
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

// TestMetrics_Counters: the table's counters are series of the
// Controller's Metrics, read from the kernel at each scrape: a policy's
// allowed counter and an isolated pod's denied counter, per direction,
// from the write that covers the pod until the one that removes it; the
// deny log's counters (from the start) only when the Enforcer logs.
func TestMetrics_Counters(t *testing.T) {
	for _, logging := range []bool{false, true} {
		t.Run(map[bool]string{false: "without logDenied", true: "with logDenied"}[logging], func(t *testing.T) {
			var opts []netpol.Option
			if logging {
				opts = append(opts, netpol.WithLogDenied(netpol.LogDenied{Group: 3, Rate: 10, Per: time.Second}))
			}
			e := newEnforcer(t, opts...)
			deny := &networkingv1.NetworkPolicy{
				ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "deny-db"},
				Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
					PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}},
			}
			client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}, deny)
			reg := prometheus.NewRegistry()
			m, err := policies.NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			c, err := policies.New(client, "n1", e, policies.WithMetrics(m))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := policies.New(client, "n1", newEnforcer(t), policies.WithMetrics(m)); err == nil {
				t.Error("a second Controller on the same Metrics: no error")
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
			const names = "nrinet_podnet_netpol_allowed_packets_total nrinet_podnet_netpol_denied_packets_total nrinet_podnet_netpol_denied_unlogged_packets_total nrinet_podnet_netpol_denied_logged_packets_total nrinet_podnet_netpol_deny_log_overruns_total"
			// Before the table is written: none but the deny log's.
			if n, err := prometheustestutil.GatherAndCount(reg, strings.Fields(names)...); err != nil || n != map[bool]int{false: 0, true: 3}[logging] {
				t.Errorf("before the table is written: %d series, %v", n, err)
			}
			db := podnet.PolicyPod{ID: "sb-db", Namespace: "prod", Name: "db-0", UID: "uid-db",
				Labels: map[string]string{"app": "db"}, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.3")}}
			if err := c.SetPod(ctx, db); err != nil {
				t.Fatal(err)
			}
			want := `
# HELP nrinet_podnet_netpol_allowed_packets_total Packets opening a connection (conntrack state new) that a NetworkPolicy's rules allowed, by policy (namespace/name) and direction (ingress, egress), read from the kernel; counted for the first of the pod's policies, by namespace/name, whose rule allows the packet. A series exists while the policy isolates a pod of this node in that direction; it starts again at 0 when nri-podnet restarts.
# TYPE nrinet_podnet_netpol_allowed_packets_total counter
nrinet_podnet_netpol_allowed_packets_total{direction="egress",policy="prod/deny-db"} 0
nrinet_podnet_netpol_allowed_packets_total{direction="ingress",policy="prod/deny-db"} 0
# HELP nrinet_podnet_netpol_denied_packets_total Packets opening a connection (conntrack state new) that no NetworkPolicy allowed, dropped, by isolated pod of this node (namespace/name) and direction (ingress, egress), read from the kernel. A series exists while the pod is isolated in that direction; it starts again at 0 when nri-podnet restarts.
# TYPE nrinet_podnet_netpol_denied_packets_total counter
nrinet_podnet_netpol_denied_packets_total{direction="egress",pod="prod/db-0"} 0
nrinet_podnet_netpol_denied_packets_total{direction="ingress",pod="prod/db-0"} 0
`
			if logging {
				want += `# HELP nrinet_podnet_netpol_denied_logged_packets_total With logDenied: denied packets logged, one line each.
# TYPE nrinet_podnet_netpol_denied_logged_packets_total counter
nrinet_podnet_netpol_denied_logged_packets_total 0
# HELP nrinet_podnet_netpol_denied_unlogged_packets_total With logDenied: denied packets that were not logged, the log's rate being exceeded, read from the kernel.
# TYPE nrinet_podnet_netpol_denied_unlogged_packets_total counter
nrinet_podnet_netpol_denied_unlogged_packets_total 0
# HELP nrinet_podnet_netpol_deny_log_overruns_total With logDenied: times the deny log's socket was full and the kernel dropped messages (each time one or more).
# TYPE nrinet_podnet_netpol_deny_log_overruns_total counter
nrinet_podnet_netpol_deny_log_overruns_total 0
`
			}
			if err := prometheustestutil.GatherAndCompare(reg, strings.NewReader(want), strings.Fields(names)...); err != nil {
				t.Error(err)
			}
			// The pod gone: its series and its policy's go.
			c.RemovePod("sb-db")
			nrtest.WaitFor(t, "the series gone with the pod", 10*time.Second, func() bool {
				n, err := prometheustestutil.GatherAndCount(reg, "nrinet_podnet_netpol_allowed_packets_total", "nrinet_podnet_netpol_denied_packets_total")
				return err == nil && n == 0
			})
		})
	}
}
