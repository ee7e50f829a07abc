package kubee2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nrinet/nrinet/internal/testutil"
)

// A seenPod is a pod of the stage's workload as first seen Running: its
// node and network then, and its addresses (status.podIPs).
type seenPod struct {
	name, node string
	network    clusterNetwork
	ips        []netip.Addr
	checks     int
	gone       bool
}

// checkPods checks, after step, every Running pod of the workload: a pod
// seen before has the addresses it had (the API's), and its network
// namespace's eth0 has them (found through CRI on its node); a pod not
// seen before is recorded. A pod no longer listed is marked gone.
func (m *migration) checkPods(step string) {
	t := m.t
	t.Helper()
	list, err := m.cp.client.CoreV1().Pods(m.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, p := range list.Items {
		listed[string(p.UID)] = true
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || len(p.Status.PodIPs) == 0 {
			continue
		}
		var ips []netip.Addr
		for _, ip := range p.Status.PodIPs {
			ips = append(ips, netip.MustParseAddr(ip.IP))
		}
		sp := m.pods[string(p.UID)]
		if sp == nil {
			sp = &seenPod{name: p.Name, node: p.Spec.NodeName, network: m.network[p.Spec.NodeName], ips: ips}
			m.pods[string(p.UID)] = sp
			n := m.byName[sp.node]
			if len(ips) != 2 || !n.podCIDRs[0].Contains(ips[0]) || !n.podCIDRs[1].Contains(ips[1]) {
				t.Errorf("after %s: pod %s on %s has addresses %v, want one of each of %v", step, p.Name, sp.node, ips, n.podCIDRs)
			}
		}
		if !slices.Equal(ips, sp.ips) {
			t.Errorf("after %s: pod %s has addresses %v; it had %v", step, p.Name, ips, sp.ips)
		}
		netns, err := m.byName[sp.node].podNetns(string(p.UID))
		if err != nil {
			t.Errorf("after %s: pod %s: %v", step, p.Name, err)
			continue
		}
		eth0, err := eth0Global(netns)
		if err != nil {
			t.Errorf("after %s: pod %s: %v", step, p.Name, err)
			continue
		}
		if !slices.Equal(eth0, sp.ips) {
			t.Errorf("after %s: pod %s: eth0 in %s has %v, the API says %v", step, p.Name, netns, eth0, sp.ips)
		}
		sp.checks++
		m.addressChecks++
	}
	for uid, sp := range m.pods {
		if !listed[uid] {
			sp.gone = true
		}
	}
}

// podNetns returns the network namespace of the pod's ready sandbox on
// the node, from CRI.
func (n *kubeNode) podNetns(uid string) (string, error) {
	out, errOut, err := n.crictl("pods", "-q", "--label", "io.kubernetes.pod.uid="+uid, "--state", "ready")
	if err != nil {
		return "", fmt.Errorf("crictl pods on %s: %v: %s", n.name, err, errOut)
	}
	ids := strings.Fields(out)
	if len(ids) != 1 {
		return "", fmt.Errorf("%d ready sandboxes of pod %s on %s, want 1", len(ids), uid, n.name)
	}
	out, errOut, err = n.crictl("inspectp", "-o", "json", ids[0])
	if err != nil {
		return "", fmt.Errorf("crictl inspectp %s on %s: %v: %s", ids[0], n.name, err, errOut)
	}
	var v struct {
		Info struct {
			RuntimeSpec struct {
				Linux struct {
					Namespaces []struct{ Type, Path string } `json:"namespaces"`
				} `json:"linux"`
			} `json:"runtimeSpec"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return "", fmt.Errorf("crictl inspectp %s: %v", ids[0], err)
	}
	for _, ns := range v.Info.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" && ns.Path != "" {
			return ns.Path, nil
		}
	}
	return "", fmt.Errorf("sandbox %s on %s has no network namespace", ids[0], n.name)
}

// eth0Global returns eth0's global addresses in the network namespace,
// IPv4 first.
func eth0Global(netns string) ([]netip.Addr, error) {
	var out []netip.Addr
	err := inNetNS(netns, func() error {
		ifc, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().IsGlobalUnicast() {
				out = append(out, p.Addr())
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b netip.Addr) int { return b2i(a.Is6()) - b2i(b.Is6()) })
	return out, err
}

// checkDaemonSet checks, after step, the DaemonSet's pods: each (not
// being deleted) is on a Node labelled to have it, none has restarted,
// and the DaemonSet wants exactly one per labelled Node.
func (m *migration) checkDaemonSet(step string) {
	t := m.t
	t.Helper()
	ctx := t.Context()
	if _, err := m.cp.client.AppsV1().DaemonSets(podnetNamespace).Get(ctx, "nri-podnet", metav1.GetOptions{}); err != nil {
		return // not applied yet
	}
	nodes, err := m.cp.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: podNetworkLabel + "=" + podNetworkPodnet})
	if err != nil {
		t.Fatal(err)
	}
	labelled := map[string]bool{}
	for _, n := range nodes.Items {
		labelled[n.Name] = true
	}
	// The DaemonSet's status follows a label change within moments.
	waitFor(t, fmt.Sprintf("after %s: the DaemonSet to want one pod on each of the %d labelled Nodes", step, len(labelled)), 10*time.Second, 100*time.Millisecond, func() (bool, string) {
		ds, err := m.cp.client.AppsV1().DaemonSets(podnetNamespace).Get(ctx, "nri-podnet", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return int(ds.Status.DesiredNumberScheduled) == len(labelled), fmt.Sprintf("it wants %d", ds.Status.DesiredNumberScheduled)
	})
	pods, err := m.cp.client.CoreV1().Pods(podnetNamespace).List(ctx, metav1.ListOptions{LabelSelector: podnetSelector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && !labelled[p.Spec.NodeName] {
			t.Errorf("after %s: the DaemonSet's pod %s is on %s, which is not labelled %s", step, p.Name, p.Spec.NodeName, podNetworkLabel)
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount > 0 {
				t.Errorf("after %s: the DaemonSet's pod %s on %s restarted %d times (last: %+v)", step, p.Name, p.Spec.NodeName, c.RestartCount, c.LastTerminationState.Terminated)
			}
		}
		m.dsChecks++
	}
}

// waitAddressesReleased waits until nri-podnet on the node holds no
// address (its metric podnet_addresses_in_use is 0 for every subnet):
// the drain's pods released theirs.
func (m *migration) waitAddressesReleased(n *kubeNode) {
	t := m.t
	t.Helper()
	url := "http://" + netip.AddrPortFrom(n.addr4, 9465).String() + "/metrics"
	var last []string
	waitFor(t, "nri-podnet on "+n.name+" to hold no address", 30*time.Second, 250*time.Millisecond, func() (bool, string) {
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, err.Error()
		}
		last = last[:0]
		held := false
		for l := range strings.Lines(string(b)) {
			// nrinet_podnet_addresses_in_use{subnet="..."} N
			if _, rest, ok := strings.Cut(l, "podnet_addresses_in_use{"); ok && !strings.HasPrefix(l, "#") {
				last = append(last, strings.TrimSpace(rest))
				f := strings.Fields(rest)
				v, err := strconv.ParseFloat(f[len(f)-1], 64)
				held = held || err != nil || v != 0
			}
		}
		return len(last) == 2 && !held, fmt.Sprintf("%s: %q", url, last)
	})
	m.leaks = append(m.leaks, fmt.Sprintf("%s, before the label goes: nri-podnet holds no address (%s)", n.name, strings.Join(last, ", ")))
}

// checkLeftNothing fails the test for anything of network left on the
// drained node n once it left it: the CNI network's leases (host-local's
// files), libcni's cached results, its bridge; nri-podnet's bridge and
// state; either's veths, routes to pod CIDRs (the node's or others'),
// and nftables tables (only kube-proxy's may be there).
func (m *migration) checkLeftNothing(n *kubeNode, left clusterNetwork) {
	t := m.t
	t.Helper()
	var found []string
	bridge := "nrkc" + m.cp.token
	if left == networkNrinet {
		bridge = "nrinet0"
		if _, err := os.Stat(n.podnetState); err == nil {
			found = append(found, "nri-podnet's state "+n.podnetState)
		}
	} else {
		entries, _ := os.ReadDir(filepath.Join(n.dir, "cni-ipam", n.cniNetName()))
		for _, e := range entries {
			if e.Name() != "lock" && !strings.HasPrefix(e.Name(), "last_reserved_ip") {
				found = append(found, "host-local lease "+e.Name())
			}
		}
		results, _ := os.ReadDir("/var/lib/cni/results")
		for _, e := range results {
			if strings.Contains(e.Name(), n.cniNetName()) {
				found = append(found, "libcni result "+e.Name())
			}
		}
	}
	if exec.Command("ip", "-n", n.netns, "link", "show", "dev", bridge).Run() == nil {
		found = append(found, "bridge "+bridge)
	}
	var links []struct {
		Name string `json:"ifname"`
	}
	if err := json.Unmarshal([]byte(run(t, "ip", "-n", n.netns, "-j", "link", "show", "type", "veth")), &links); err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if l.Name != "eth0" { // the node's uplink
			found = append(found, "veth "+l.Name)
		}
	}
	for _, f := range []string{"-4", "-6"} {
		var routes []struct {
			Dst      string `json:"dst"`
			Dev      string `json:"dev"`
			Protocol string `json:"protocol"`
		}
		if err := json.Unmarshal([]byte(run(t, "ip", f, "-n", n.netns, "-j", "route", "show")), &routes); err != nil {
			t.Fatal(err)
		}
		for _, r := range routes {
			p, err := netip.ParsePrefix(r.Dst)
			if a, err2 := netip.ParseAddr(r.Dst); err != nil && err2 == nil {
				p, err = netip.PrefixFrom(a, a.BitLen()), nil // a host route
			}
			if err == nil && (p.Overlaps(clusterCIDR4) || p.Overlaps(clusterCIDR6)) {
				found = append(found, fmt.Sprintf("route %s dev %s proto %s", r.Dst, r.Dev, r.Protocol))
			}
		}
	}
	var tables struct {
		Nftables []struct {
			Table *struct{ Family, Name string } `json:"table"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(run(t, "ip", "netns", "exec", n.netns, nftPath(t), "-j", "list", "tables")), &tables); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range tables.Nftables {
		if x.Table != nil {
			names = append(names, x.Table.Family+" "+x.Table.Name)
			if x.Table.Name != "kube-proxy" {
				found = append(found, "nftables table "+x.Table.Family+" "+x.Table.Name)
			}
		}
	}
	for _, f := range found {
		t.Errorf("%s left %s: %s is still there", n.name, left, f)
	}
	m.leaks = append(m.leaks, fmt.Sprintf("%s, after leaving %s: %d leftovers; bridge %s gone, no veth, no route to a pod CIDR, nftables tables %v",
		n.name, left, len(found), bridge, names))
}

// A crossRecord is one cross-node check: from a pod of one network to a
// pod, or through the Service to a backend, of the other node.
type crossRecord struct {
	when, from, to, path string
	tries                int
	err                  error
}

// serviceSpreadTimeout bounds how long the cross-node checks request
// the Service until the other node's backend answers.
const serviceSpreadTimeout = 10 * time.Second

// crossChecks checks traffic between the two nodes' backends, each way,
// both families: pod to pod (HTTP to the other's address), and through
// the Service (requests every 50 ms until the other node's backend
// answers, at most serviceSpreadTimeout; each must succeed). The records
// name each pod's network.
func (m *migration) crossChecks(when string) {
	t := m.t
	t.Helper()
	var pods []corev1.Pod
	for _, n := range m.c.nodes {
		p, ok := m.readyPod("backend", n.name)
		if !ok {
			t.Fatalf("%s: no Ready backend on %s", when, n.name)
		}
		pods = append(pods, p)
	}
	for i, from := range pods {
		to := pods[1-i]
		netns, err := m.byName[from.Spec.NodeName].podNetns(string(from.UID))
		if err != nil {
			t.Fatal(err)
		}
		label := func(p corev1.Pod) string {
			return fmt.Sprintf("%s (%s, %s)", p.Name, p.Spec.NodeName, m.network[p.Spec.NodeName])
		}
		for fam, ip := range to.Status.PodIPs {
			a := netip.MustParseAddr(ip.IP)
			body, err := httpIn(netns, netip.AddrPortFrom(a, backendPort), 2*time.Second)
			if err == nil && body != to.Name {
				err = fmt.Errorf("answered by %q", body)
			}
			m.cross = append(m.cross, crossRecord{when, label(from), label(to), "pod " + familyOf(a), 1, err})
			// Until the other node's backend answers: kube-proxy adds an
			// endpoint a moment after its pod is Ready. Every request
			// must succeed.
			svc := m.serviceIPs[fam]
			tries := 0
			err = testutil.Poll(serviceSpreadTimeout, 50*time.Millisecond, func() error {
				tries++
				body, err := httpIn(netns, netip.AddrPortFrom(svc, servicePort), 2*time.Second)
				switch {
				case err != nil:
					return testutil.Abort(err)
				case body != to.Name:
					return fmt.Errorf("%d requests, answered only by %s", tries, from.Name)
				}
				return nil
			})
			m.cross = append(m.cross, crossRecord{when, label(from), label(to), "Service " + familyOf(svc), tries, err})
		}
	}
	for _, r := range m.cross {
		if r.when == when && r.err != nil {
			t.Errorf("%s: %s → %s, %s: %v", when, r.from, r.to, r.path, r.err)
		}
	}
}

// httpIn sends GET / over HTTP/1.0 to addr from inside the network
// namespace at netns (a connection made on the namespace's thread stays
// in it) and returns the body of a 200 answer, trimmed.
func httpIn(netns string, addr netip.AddrPort, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	var conn net.Conn
	err := inNetNS(netns, func() error {
		c, err := net.DialTimeout("tcp", addr.String(), timeout)
		conn = c
		return err
	})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	if _, err := fmt.Fprintf(conn, "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", addr); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	head, body, _ := strings.Cut(string(b), "\r\n\r\n")
	if f := strings.Fields(head); len(f) < 2 || f[1] != "200" {
		return "", fmt.Errorf("GET http://%s/: %.40q", addr, head)
	}
	return strings.TrimSpace(body), nil
}
