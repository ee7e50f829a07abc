package netpol_test

import (
	"fmt"
	"net/netip"
	"os"
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

// BenchmarkApply: the whole table written in one transaction, in a
// network namespace; it reports the table's size.
func BenchmarkApply(b *testing.B) {
	testutil.SkipUnlessRoot(b)
	f, err := os.Open(testutil.NewNetNS(b, "nrnb"+randHex(4)))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	e, err := netpol.New(netpol.WithNetNS(int(f.Fd())))
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range scales {
		pols, nss, pods := s.objects()
		p, err := netpol.Compile(pols, nss, pods)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("pods=%d,policies=%d", s.pods, s.policies), func(b *testing.B) {
			var st netpol.Stats
			for b.Loop() {
				if st, err = e.Apply(p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(st.Rules), "rules")
			b.ReportMetric(float64(st.Elements), "elements")
			b.ReportMetric(float64(st.Pods), "isolated-pods")
		})
	}
}
