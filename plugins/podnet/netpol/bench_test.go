package netpol_test

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// scale is a synthetic cluster: pods spread over namespaces, each labelled
// app=a<k>, local the first of every node's share, and policies that each
// isolate one app of a namespace for ingress from another app of any
// namespace labelled like it, on a TCP port.
type scale struct {
	namespaces, pods, local, policies int
}

func (s scale) objects() ([]*networkingv1.NetworkPolicy, []netpol.Namespace, []netpol.Pod) {
	var nss []netpol.Namespace
	for i := range s.namespaces {
		nss = append(nss, netpol.Namespace{Name: fmt.Sprintf("ns%d", i), Labels: map[string]string{"team": fmt.Sprintf("t%d", i%10)}})
	}
	var pods []netpol.Pod
	for i := range s.pods {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		pods = append(pods, netpol.Pod{
			Namespace: fmt.Sprintf("ns%d", i%s.namespaces), Name: fmt.Sprintf("p%d", i),
			Labels: map[string]string{"app": fmt.Sprintf("a%d", (i/s.namespaces)%10)},
			IPs:    []netip.Addr{a}, Local: i < s.local,
		})
	}
	var pols []*networkingv1.NetworkPolicy
	for i := range s.policies {
		pols = append(pols, &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", i%s.namespaces), Name: fmt.Sprintf("pol%d", i)},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("a%d", i%10)}},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": fmt.Sprintf("t%d", i%10)}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("a%d", (i+1)%10)}},
					}},
					Ports: []networkingv1.NetworkPolicyPort{tcpPort(8000 + i%100)},
				}},
			},
		})
	}
	return pols, nss, pods
}

var scales = []scale{
	{namespaces: 10, pods: 100, local: 10, policies: 10},
	{namespaces: 100, pods: 10000, local: 100, policies: 1000},
}

// BenchmarkCompile: the program of a node's pods.
func BenchmarkCompile(b *testing.B) {
	for _, s := range scales {
		pols, nss, pods := s.objects()
		b.Run(fmt.Sprintf("pods=%d,policies=%d", s.pods, s.policies), func(b *testing.B) {
			for b.Loop() {
				if _, err := netpol.Compile(pols, nss, pods); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSync: the whole table written in one transaction, in a
// network namespace (each op by a new Enforcer, whose first Sync writes
// the whole table); it reports the table's size.
func BenchmarkSync(b *testing.B) {
	testutil.SkipUnlessRoot(b)
	f, err := os.Open(testutil.NewNetNS(b, "nrnb"+randHex(4)))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, s := range scales {
		pols, nss, pods := s.objects()
		p, err := netpol.Compile(pols, nss, pods)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("pods=%d,policies=%d", s.pods, s.policies), func(b *testing.B) {
			var st netpol.Stats
			for b.Loop() {
				e, err := netpol.New(netpol.WithNetNS(int(f.Fd())))
				if err != nil {
					b.Fatal(err)
				}
				if st, err = e.Sync(p); err != nil {
					b.Fatal(err)
				}
				if !st.Full {
					b.Fatal("a new Enforcer's Sync did not write the whole table")
				}
			}
			b.ReportMetric(float64(st.Rules), "rules")
			b.ReportMetric(float64(st.Elements), "elements")
			b.ReportMetric(float64(st.Pods), "isolated-pods")
		})
	}
}

// BenchmarkSyncChange: one change at a time written as changes to the
// table in place (each op alternates between the program and the program
// changed): a peer pod that comes and goes (a pod of app a1 in a
// namespace of team t0, a peer of the policies isolating app a0 in ns0),
// and a policy whose port changes. It reports the transaction's size.
func BenchmarkSyncChange(b *testing.B) {
	testutil.SkipUnlessRoot(b)
	f, err := os.Open(testutil.NewNetNS(b, "nrnc"+randHex(4)))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, s := range scales {
		pols, nss, pods := s.objects()
		base, err := netpol.Compile(pols, nss, pods)
		if err != nil {
			b.Fatal(err)
		}
		peer := netpol.Pod{Namespace: "ns0", Name: "extra", Labels: map[string]string{"app": "a1"}, IPs: []netip.Addr{netip.MustParseAddr("11.0.0.1")}}
		withPeer, err := netpol.Compile(pols, nss, append(pods[:len(pods):len(pods)], peer))
		if err != nil {
			b.Fatal(err)
		}
		changed := slices.Clone(pols)
		p0 := changed[0].DeepCopy()
		p0.Spec.Ingress[0].Ports = []networkingv1.NetworkPolicyPort{tcpPort(9999)}
		changed[0] = p0
		withPort, err := netpol.Compile(changed, nss, pods)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name    string
			variant *netpol.Program
		}{{"pod", withPeer}, {"policy", withPort}} {
			b.Run(fmt.Sprintf("pods=%d,policies=%d/%s", s.pods, s.policies, c.name), func(b *testing.B) {
				e, err := netpol.New(netpol.WithNetNS(int(f.Fd())))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.Sync(base); err != nil {
					b.Fatal(err)
				}
				var written int
				for i := 0; b.Loop(); i++ {
					p := base
					if i%2 == 0 {
						p = c.variant
					}
					st, err := e.Sync(p)
					if err != nil {
						b.Fatal(err)
					}
					if st.Full || st.Written == 0 {
						b.Fatalf("Sync wrote %d objects, whole table %v: want a change", st.Written, st.Full)
					}
					written = st.Written
				}
				b.ReportMetric(float64(written), "objects-written")
			})
		}
	}
}

// BenchmarkPathological: the review's policy (an ipBlock with 20,000
// scattered excepts selecting 50 local pods, which made 2,000,150 set
// elements and a 7.3 s write when every pod had its own copy of the
// peers): compile and a whole-table write by a new Enforcer, with the
// bound (the policy is left out, its pods isolated), without it (the
// peers shared, written once), and at 10,000 excepts (under the bound).
func BenchmarkPathological(b *testing.B) {
	testutil.SkipUnlessRoot(b)
	f, err := os.Open(testutil.NewNetNS(b, "nrnb"+randHex(4)))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, c := range []struct {
		name    string
		excepts int
		max     int
	}{
		{"excepts=20000,bounded", 20000, netpol.DefaultMaxPolicyElements},
		{"excepts=20000,unbounded", 20000, 0},
		{"excepts=10000,bounded", 10000, netpol.DefaultMaxPolicyElements},
	} {
		pols, pods := pathological(c.excepts, 50)
		b.Run(c.name, func(b *testing.B) {
			var st netpol.Stats
			for b.Loop() {
				p, _ := netpol.CompileMax(pols, nil, pods, c.max)
				e, err := netpol.New(netpol.WithNetNS(int(f.Fd())))
				if err != nil {
					b.Fatal(err)
				}
				if st, err = e.Sync(p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(st.Elements), "elements")
		})
	}
}

// BenchmarkCompilePathological compiles the review's policy (20,000
// excepts, 50 local pods) again, as a sync for a starting pod does: anew
// (Compile) and with the ipBlock's set from the last compile (a Cache, as
// nri-podnet's controller keeps one).
func BenchmarkCompilePathological(b *testing.B) {
	pols, pods := pathological(20000, 50)
	b.Run("cache=none", func(b *testing.B) {
		for b.Loop() {
			netpol.Compile(pols, nil, pods)
		}
	})
	b.Run("cache=warm", func(b *testing.B) {
		c := netpol.NewCache()
		c.CompileMax(pols, nil, pods, netpol.DefaultMaxPolicyElements)
		for b.Loop() {
			c.CompileMax(pols, nil, pods, netpol.DefaultMaxPolicyElements)
		}
	})
}
