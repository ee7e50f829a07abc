package kubee2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nrinet/nrinet/ipam"
)

// attachmentRecord is what the test reads of nri-podnet's record of a
// pod's secondary interfaces (STATEDIR/attachments/SANDBOXID.json,
// docs/multinetwork.md, "Restart safety").
type attachmentRecord struct {
	Owner      string `json:"owner"`
	Interfaces []struct {
		Network  string `json:"network"`
		Kind     string `json:"kind"`
		Name     string `json:"name"`
		MAC      string `json:"mac"`
		HostName string `json:"hostName"`
	} `json:"interfaces"`
}

// attachments reads the node's records, by owner (sandbox ID).
func (s *multinetStage) attachments(suffix string) map[string]attachmentRecord {
	t := s.t
	t.Helper()
	dir := s.nodes[suffix].multinetState("attachments")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("nri-podnet's records on %s: %v", s.nodes[suffix].name, err)
	}
	out := map[string]attachmentRecord{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var r attachmentRecord
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out[r.Owner] = r
	}
	return out
}

// checkNodeState checks what nri-podnet keeps on the node of suffix
// against the pods that run there with secondary interfaces, and nothing
// more:
//   - one record per such pod (its sandbox), with its interfaces;
//   - the ports of each bridge network's bridge are the host ends of
//     the recorded interfaces of that network (and blue's uplink), and
//     the node has no other host end of a secondary veth ("nrm...");
//   - the host interface of network nic2 is in the node, down, with its
//     own MAC, unless a recorded pod has it (then it is not in the node).
func (s *multinetStage) checkNodeState(suffix string, pods ...*multinetPod) {
	t := s.t
	t.Helper()
	n := s.nodes[suffix]
	recs := s.attachments(suffix)
	var want []string
	for _, p := range pods {
		if p.suffix == suffix && len(p.itfs) > 0 {
			want = append(want, p.sandboxID)
		}
	}
	slices.Sort(want)
	if got := slices.Sorted(maps.Keys(recs)); !slices.Equal(got, want) {
		t.Errorf("node %s: nri-podnet has records of sandboxes %v, want those of the pods with secondary interfaces %v", n.name, got, want)
	}
	hostEnds := map[string][]string{} // network → host ends recorded
	nicTaken := false
	for _, r := range recs {
		for _, itf := range r.Interfaces {
			switch itf.Kind {
			case "bridge":
				hostEnds[itf.Network] = append(hostEnds[itf.Network], itf.HostName)
			case "host":
				nicTaken = true
			}
		}
	}
	var all []string
	for _, nw := range multinetPlan {
		if _, ok := nw.own[suffix]; !ok || nw.kind != "bridge" {
			continue
		}
		want := slices.Clone(hostEnds[nw.name])
		if nw.name == "blue" {
			want = append(want, blueUplink)
		}
		slices.Sort(want)
		if got := linkNames(s, n.netns, "master", nw.dev); !slices.Equal(got, want) {
			t.Errorf("node %s: bridge %s (network %s) has ports %v, want %v", n.name, nw.dev, nw.name, got, want)
		}
		all = append(all, hostEnds[nw.name]...)
	}
	var strays []string
	for _, l := range linkNames(s, n.netns) {
		if strings.HasPrefix(l, "nrm") && !slices.Contains(all, l) {
			strays = append(strays, l)
		}
	}
	if len(strays) > 0 {
		t.Errorf("node %s: host ends of secondary veths no record holds: %v", n.name, strays)
	}
	if _, ok := planNetwork("nic2").own[suffix]; ok {
		dev := planNetwork("nic2").dev
		out, err := ipIn(n.netns, "-j", "link", "show", "dev", dev)
		switch {
		case nicTaken && err == nil:
			t.Errorf("node %s: %s is on the node while a pod has it:\n%s", n.name, dev, out)
		case !nicTaken && err != nil:
			t.Errorf("node %s: %s is not on the node, and no pod has it: %v\n%s", n.name, dev, err, out)
		case !nicTaken:
			var l []struct {
				Address string   `json:"address"`
				Flags   []string `json:"flags"`
			}
			if json.Unmarshal([]byte(out), &l) != nil || len(l) != 1 || l[0].Address != s.nicMAC || slices.Contains(l[0].Flags, "UP") {
				t.Errorf("node %s: %s back on the node is %s, want down with MAC %s", n.name, dev, out, s.nicMAC)
			}
		}
	}
}

// linkNames lists the names of the links of namespace netns (ip link
// show args...), sorted.
func linkNames(s *multinetStage, netns string, args ...string) []string {
	s.t.Helper()
	var links []struct {
		Name string `json:"ifname"`
	}
	out := run(s.t, "ip", append([]string{"-n", netns, "-j", "link", "show"}, args...)...)
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		s.t.Fatalf("ip -n %s -j link show %v: %v\n%s", netns, args, err, out)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	return names
}

// checkNoClaimsPrepared checks that the driver of node suffix holds no
// prepared claim (STATEDIR/claims is empty): the kubelet unprepared
// every claim of the pods it removed.
func (s *multinetStage) checkNoClaimsPrepared(suffix string) {
	t := s.t
	t.Helper()
	entries, err := os.ReadDir(s.nodes[suffix].multinetState("claims"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("node %s: the driver still holds prepared claim %s", s.nodes[suffix].name, e.Name())
	}
}

// checkAllocators opens nri-podnet's allocators of node suffix (ipam,
// the bbolt files it keeps; it must not run, as it holds their locks):
// each secondary network's and the primary network's (its pod CIDRs);
// each must hold no address and be consistent.
func (s *multinetStage) checkAllocators(suffix string) {
	t := s.t
	t.Helper()
	n := s.nodes[suffix]
	var cidrs []string
	for _, c := range n.podCIDRs {
		cidrs = append(cidrs, c.String())
	}
	s.checkAllocator(n, "the primary network", filepath.Join(n.podnetState, "ipam.db"), cidrs, nil, nil)
	for _, nw := range multinetPlan {
		own, ok := nw.own[suffix]
		if !ok {
			continue
		}
		var subnets, exclude, gateways []string
		for i, p := range nw.subnets {
			subnets = append(subnets, p.String())
			for _, e := range complement(p, own[i]) {
				exclude = append(exclude, e.String())
			}
			gateways = append(gateways, own[i].Addr().Next().String())
		}
		s.checkAllocator(n, "network "+nw.name, n.multinetState("network-"+nw.name+".db"), subnets, exclude, gateways)
	}
}

// checkAllocator opens the allocator file path of the node with the
// configuration nri-podnet gives it, and checks that it holds no address
// and is consistent.
func (s *multinetStage) checkAllocator(n *kubeNode, what, path string, subnets, exclude, gateways []string) {
	t := s.t
	t.Helper()
	cfg, err := ipam.ParseConfig(subnets, exclude, gateways)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ipam.Open(path, cfg, ipam.WithTimeout(5*time.Second))
	if err != nil {
		t.Errorf("node %s: %s's allocator: %v", n.name, what, err)
		return
	}
	defer a.Close()
	allocs, err := a.Allocations()
	if err != nil || len(allocs) > 0 {
		t.Errorf("node %s: %s's allocator holds %v (%v) with no pod left", n.name, what, allocs, err)
	}
	if err := a.Check(); err != nil {
		t.Errorf("node %s: %s's allocator: %v", n.name, what, err)
	}
}

// killPodnet kills nri-podnet's process on the node (SIGKILL: no
// shutdown of its own) and waits until the kubelet restarted its
// container (the same pod, one more restart) and it is Ready, and the
// Node Ready.
func (n *kubeNode) killPodnet() {
	t := n.t
	t.Helper()
	pods := n.podnetPods()
	if len(pods) != 1 || len(pods[0].Status.ContainerStatuses) != 1 {
		t.Fatalf("%d nri-podnet pods on %s, want 1 with one container", len(pods), n.name)
	}
	restarts := pods[0].Status.ContainerStatuses[0].RestartCount
	id := strings.TrimSpace(n.must("ps", "-q", "--name", "nri-podnet", "--state", "running"))
	var insp struct {
		Info struct {
			Pid int `json:"pid"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(n.must("inspect", "-o", "json", id)), &insp); err != nil || insp.Info.Pid <= 1 {
		t.Fatalf("nri-podnet's container %s on %s: pid %d: %v", id, n.name, insp.Info.Pid, err)
	}
	if err := syscall.Kill(insp.Info.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d (nri-podnet on %s): %v", insp.Info.Pid, n.name, err)
	}
	t.Logf("nri-podnet on %s (pid %d, container %.12s) killed", n.name, insp.Info.Pid, id)
	waitFor(t, "nri-podnet's container restarted on "+n.name, podnetReadyTimeout, 250*time.Millisecond, func() (bool, string) {
		pods := n.podnetPods()
		if len(pods) != 1 || len(pods[0].Status.ContainerStatuses) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods))
		}
		st := pods[0].Status.ContainerStatuses[0]
		return st.RestartCount > restarts && st.Ready, "restarts " + strconv.Itoa(int(st.RestartCount)) + ", ready " + strconv.FormatBool(st.Ready)
	})
	n.waitReady()
}
