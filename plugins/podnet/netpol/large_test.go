package netpol_test

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// TestEnforcer_LargeTable: a pod selected by many policies with long
// names (its deny rule's comment would pass the kernel's 256 bytes of
// user data) and a peer set of thousands of scattered addresses of each
// family (past one netlink attribute's 64 KiB) are written, and read back
// whole.
func TestEnforcer_LargeTable(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	f, err := os.Open(testutil.NewNetNS(t, "nrnl"+randHex(4)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, err := netpol.New(netpol.WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	pods := []netpol.Pod{{Namespace: "prod", Name: "db", Labels: map[string]string{"app": "db"}, IPs: []netip.Addr{netip.MustParseAddr("198.18.0.3")}, Local: true}}
	const peers4, peers6 = 5000, 3000
	for i := range peers4 {
		// Every other address: no two peers make one interval.
		pods = append(pods, netpol.Pod{Namespace: "prod", Name: fmt.Sprint("c4-", i), Labels: map[string]string{"role": "client"},
			IPs: []netip.Addr{netip.AddrFrom4([4]byte{10, byte(i >> 7), byte(i << 1), 1})}})
	}
	for i := range peers6 {
		pods = append(pods, netpol.Pod{Namespace: "prod", Name: fmt.Sprint("c6-", i), Labels: map[string]string{"role": "client"},
			IPs: []netip.Addr{netip.MustParseAddr(fmt.Sprintf("fd00:198:18:%x::%x", i, 2*i+1))}})
	}
	var pols []*networkingv1.NetworkPolicy
	for i := range 12 {
		pols = append(pols, policy("prod", fmt.Sprintf("a-rather-long-policy-name-as-teams-write-them-%02d", i), map[string]string{"app": "db"}, nil,
			[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}}}}, nil))
	}
	p, err := netpol.Compile(pols, nil, pods)
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Sync(p)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := e.Rules()
	if err != nil {
		t.Fatal(err)
	}
	var deny string
	for _, r := range rules {
		if strings.Contains(r.Comment, "denied") {
			deny = r.Comment
		}
	}
	if !strings.HasSuffix(deny, "...") || len(deny) > 250 {
		t.Errorf("the deny rule's comment %q (%d bytes): want it cut to 250 bytes with an ellipsis", deny, len(deny))
	}
	// Every element of one rule's sets, read back from the kernel.
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range []struct {
		suffix string
		want   int
	}{{"-v4", 2 * peers4}, {"-v6", 2 * peers6}} {
		// The peers of each policy's rule are a set of their own,
		// peers-HASH-v4 and -v6, shared by the pods the policy selects.
		sets, err := c.GetSets(&nftables.Table{Name: netpol.TableName, Family: nftables.TableFamilyINet})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(sets, func(s *nftables.Set) bool {
			return strings.HasPrefix(s.Name, "peers-") && strings.HasSuffix(s.Name, fam.suffix)
		})
		if i < 0 {
			t.Fatalf("no set peers-HASH%s in the table", fam.suffix)
		}
		set := sets[i]
		elems, err := c.GetSetElements(set)
		if err != nil {
			t.Fatal(err)
		}
		if len(elems) != fam.want {
			t.Errorf("set %s holds %d elements, want %d (start and end of each peer)", set.Name, len(elems), fam.want)
		}
	}
	t.Logf("%d rules, %d set elements", st.Rules, st.Elements)
}
