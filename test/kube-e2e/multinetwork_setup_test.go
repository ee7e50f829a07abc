package kubee2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// draDriver is nri-podnet's DRA driver (plugins/podnet/dra.DriverName):
// the DeviceClass selects it, and the ResourceSlices and the claims'
// status.devices carry it.
const draDriver = "podnet.nrinet.io"

// A secondaryNetwork is one network of the multi-network stage's plan
// (docs/dev/kube-e2e.md, "Multi-network through DRA"). Its addresses exist
// only in the nodes', the pods' and the far end's network namespaces,
// never on the host.
type secondaryNetwork struct {
	name string
	// kind is bridge, macvlan or host; dev its bridge, master or host
	// interface in the node's namespace.
	kind, dev string
	// subnets are the whole network's, one of each family at most.
	subnets []netip.Prefix
	// own is, by node suffix, the part of each subnet that node
	// allocates from (the rest is its exclude); a node without an entry
	// does not have the network.
	own map[string][]netip.Prefix
	// farEnd: the far end has the last address but one of each subnet (.254,
	// ::fe), outside every node's part.
	farEnd bool
}

// multinetPlan is the stage's networks: "blue", "lan" and "nic2" as
// deploy/examples/multinetwork's ResourceClaimTemplates ask for them, and
// "tiny", one address, for the exhausted subnet.
var multinetPlan = []secondaryNetwork{
	{name: "blue", kind: "bridge", dev: "nrblue0", farEnd: true,
		subnets: prefixes("198.19.160.0/24", "fd00:198:18:e0a0::/120"),
		own: map[string][]netip.Prefix{
			"a": prefixes("198.19.160.0/25", "fd00:198:18:e0a0::/121"),
			"b": prefixes("198.19.160.128/26", "fd00:198:18:e0a0::80/122"),
		}},
	{name: "lan", kind: "macvlan", dev: "eth1", farEnd: true,
		subnets: prefixes("198.19.161.0/24", "fd00:198:18:e0a1::/120"),
		own: map[string][]netip.Prefix{
			"a": prefixes("198.19.161.0/25", "fd00:198:18:e0a1::/121"),
			"b": prefixes("198.19.161.128/26", "fd00:198:18:e0a1::80/122"),
		}},
	{name: "nic2", kind: "host", dev: "eth2", farEnd: true,
		subnets: prefixes("198.19.162.0/24", "fd00:198:18:e0a2::/120"),
		own:     map[string][]netip.Prefix{"a": prefixes("198.19.162.0/25", "fd00:198:18:e0a2::/121")}},
	{name: "tiny", kind: "bridge", dev: "nrtiny0",
		subnets: prefixes("198.19.163.0/30"),
		own:     map[string][]netip.Prefix{"a": prefixes("198.19.163.0/30")}},
}

// blueUplink is the interface, in each node, that the test enslaves to
// network blue's bridge: the bridged network's way to the other node.
const blueUplink = "eth3"

func prefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// planNetwork returns the plan's network name.
func planNetwork(name string) secondaryNetwork {
	for _, n := range multinetPlan {
		if n.name == name {
			return n
		}
	}
	panic("no network " + name + " in the plan")
}

// farEndAddr is the far end's address on subnet s: its last address
// but one (.254 of a /24, ::fe of a /120).
func farEndAddr(s netip.Prefix) netip.Addr {
	b := s.Masked().Addr().AsSlice()
	for i := s.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	last, _ := netip.AddrFromSlice(b)
	return last.Prev()
}

// complement returns the prefixes that cover s but own, where own lies
// in s: the siblings along the way from s down to own.
func complement(s, own netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for bits := s.Bits() + 1; bits <= own.Bits(); bits++ {
		mine, _ := own.Addr().Prefix(bits)
		// The other half of the prefix one bit shorter.
		b := mine.Addr().AsSlice()
		i := (bits - 1) / 8
		b[i] ^= 0x80 >> ((bits - 1) % 8)
		other, _ := netip.AddrFromSlice(b)
		out = append(out, netip.PrefixFrom(other, bits))
	}
	return out
}

// nodeMultinetConfig is node suffix's -multinetwork file (plugins/
// podnet/multinet's Config): the plan's networks it has, each with its
// part of the subnets (the rest excluded) and the first address of that
// part as the gateway, so that the two nodes' bridges, on one segment,
// do not share an address.
func nodeMultinetConfig(suffix string) string {
	type network struct {
		Name      string   `json:"name"`
		Kind      string   `json:"kind"`
		Bridge    string   `json:"bridge,omitempty"`
		Master    string   `json:"master,omitempty"`
		Interface string   `json:"interface,omitempty"`
		Subnets   []string `json:"subnets"`
		Exclude   []string `json:"exclude,omitempty"`
		Gateways  []string `json:"gateways"`
	}
	var nets []network
	for _, n := range multinetPlan {
		own, ok := n.own[suffix]
		if !ok {
			continue
		}
		nw := network{Name: n.name, Kind: n.kind}
		switch n.kind {
		case "bridge":
			nw.Bridge = n.dev
		case "macvlan":
			nw.Master = n.dev
		case "host":
			nw.Interface = n.dev
		}
		for i, s := range n.subnets {
			nw.Subnets = append(nw.Subnets, s.String())
			for _, p := range complement(s, own[i]) {
				nw.Exclude = append(nw.Exclude, p.String())
			}
			nw.Gateways = append(nw.Gateways, own[i].Addr().Next().String())
		}
		nets = append(nets, nw)
	}
	b, err := json.Marshal(map[string]any{"stateDir": multinetStateDir, "networks": nets})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// multinetStateDir is the networks' state directory in nri-podnet's
// container: under the state volume (the node's podnetState on the
// host).
const multinetStateDir = "/var/lib/nri-podnet/multinet"

// multinetState is a path under the node's multinet state directory on
// the host.
func (n *kubeNode) multinetState(elem ...string) string {
	return filepath.Join(append([]string{n.podnetState, "multinet"}, elem...)...)
}

// secondaryUnderlay is the second L2 segment between the nodes: a bridge
// nrks<token> in the host's namespace, without addresses, with veths into
// the nodes (their eth1, eth2, eth3) and into the far end, a namespace
// with an address on every network of the plan that has farEnd.
type secondaryUnderlay struct {
	t      testing.TB
	token  string
	bridge string
	// farEnd is the far end's namespace's name.
	farEnd string
	// veths are the host ends, deleted by name at the cleanup.
	veths []string
}

// newSecondaryUnderlay makes the bridge and the far end. Call it before
// the nodes start: its cleanup, which deletes the bridge, the host ends
// and the far end by name, then runs after theirs.
func newSecondaryUnderlay(t testing.TB, token string) *secondaryUnderlay {
	t.Helper()
	s := &secondaryUnderlay{t: t, token: token, bridge: "nrks" + token, farEnd: "nrke-" + token + "-f"}
	run(t, "ip", "link", "add", s.bridge, "type", "bridge")
	run(t, "ip", "netns", "add", s.farEnd)
	t.Cleanup(func() {
		for _, v := range s.veths {
			deleteLink(t, "", v)
		}
		deleteLink(t, "", s.bridge)
		if out, err := exec.Command("ip", "netns", "del", s.farEnd).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", s.farEnd, err, out)
		}
	})
	run(t, "ip", "link", "set", s.bridge, "up")
	s.plug(filepath.Join(netnsDir, s.farEnd), s.farEnd, "f", "eth0")
	ns := func(args ...string) { run(t, "ip", append([]string{"-n", s.farEnd}, args...)...) }
	ns("link", "set", "lo", "up")
	for _, n := range multinetPlan {
		if !n.farEnd {
			continue
		}
		for _, p := range n.subnets {
			args := []string{"addr", "add", netip.PrefixFrom(farEndAddr(p), p.Bits()).String(), "dev", "eth0"}
			if p.Addr().Is6() {
				args = append(args, "nodad")
			}
			ns(args...)
		}
	}
	return s
}

// plug makes a veth pair: the host end nrks<token><id> on the bridge, up;
// the other end named inName in the namespace netns (at netnsPath), with
// IPv6 duplicate address detection off, up.
func (s *secondaryUnderlay) plug(netnsPath, netns, id, inName string) {
	t := s.t
	t.Helper()
	host := "nrks" + s.token + id
	run(t, "ip", "link", "add", host, "type", "veth", "peer", "name", inName, "netns", netns)
	s.veths = append(s.veths, host)
	run(t, "ip", "link", "set", host, "master", s.bridge, "up")
	sysctl(t, netnsPath, "net/ipv6/conf/"+inName+"/accept_dad", "0")
	run(t, "ip", "-n", netns, "link", "set", inName, "up")
}

// attach gives the node of suffix its interfaces on the segment: eth1
// (lan's macvlan master), eth3 (the uplink of blue's bridge, which the
// test makes, with a fixed MAC, as the node's own network setup would)
// and, where the node has network nic2, eth2 (moved into a pod whole).
// It returns eth2's MAC ("" without).
func (s *secondaryUnderlay) attach(n *kubeNode, suffix string) string {
	t := s.t
	t.Helper()
	s.plug(n.netnsPath, n.netns, suffix+"1", planNetwork("lan").dev)
	s.plug(n.netnsPath, n.netns, suffix+"3", blueUplink)
	blue := planNetwork("blue").dev
	mac := "02:00:c6:13:a0:0" + map[string]string{"a": "a", "b": "b"}[suffix]
	run(t, "ip", "-n", n.netns, "link", "add", blue, "address", mac, "type", "bridge")
	run(t, "ip", "-n", n.netns, "link", "set", blueUplink, "master", blue)
	run(t, "ip", "-n", n.netns, "link", "set", blue, "up")
	if _, ok := planNetwork("nic2").own[suffix]; !ok {
		return ""
	}
	nic := planNetwork("nic2").dev
	s.plug(n.netnsPath, n.netns, suffix+"2", nic)
	return linkMAC(t, n.netns, nic).String()
}

// multinetOverlay writes the test's overlay of
// deploy/overlays/nri-podnet-multinetwork: podnetOverlay's changes, and
// these (docs/dev/kube-e2e.md, "Multi-network through DRA"):
//
//   - the ConfigMap nri-podnet-multinetwork gets one file per node,
//     <Node>.json (nodeMultinetConfig), and -multinetwork names the
//     node's ($(NODE_NAME), the DaemonSet's variable): each node
//     allocates from a part of each subnet of its own;
//   - -kubelet-dir is the node's kubelet root, <dir>/kubelet/<Node>,
//     and the volume of the kubelet's directories is <dir>/kubelet,
//     mounted at the same path, instead of /var/lib/kubelet/plugins and
//     /var/lib/kubelet/plugins_registry: the kubelet connects to the
//     DRA socket by the path the driver registers, which must be the
//     same in the container and on the host, and the nodes' kubelets
//     share the host's file system.
func (cp *controlPlane) multinetOverlay(nodes map[string]*kubeNode, direct bool) string {
	t := cp.t
	t.Helper()
	// The -multinetwork argument's place, from the overlay's own patch,
	// so that a change there fails here (and the JSON patch's test op
	// fails kustomize if it does not hold).
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "overlays", "nri-podnet-multinetwork", "daemonset-patch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.Unmarshal(b, &ds); err != nil {
		t.Fatalf("daemonset-patch.yaml: %v", err)
	}
	args := ds.Spec.Template.Spec.Containers[0].Args
	i := slices.Index(args, "-multinetwork")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("daemonset-patch.yaml: no -multinetwork FILE in the arguments %q", args)
	}
	kubelets := filepath.Join(cp.dir, "kubelet")
	var data strings.Builder
	for _, suffix := range slices.Sorted(maps.Keys(nodes)) {
		fmt.Fprintf(&data, `
    - op: add
      path: /data/%s.json
      value: %q`, nodes[suffix].name, nodeMultinetConfig(suffix))
	}
	patches := fmt.Sprintf(`- target:
    kind: ConfigMap
    name: nri-podnet-multinetwork
  patch: |-%[1]s
- target:
    kind: DaemonSet
    name: nri-podnet
  patch: |-
    - op: test
      path: /spec/template/spec/containers/0/args/%[2]d
      value: %[3]q
    - op: replace
      path: /spec/template/spec/containers/0/args/%[2]d
      value: /etc/nri-podnet-multinetwork/$(NODE_NAME).json
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: -kubelet-dir
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: %[4]q
- patch: |-
    apiVersion: apps/v1
    kind: DaemonSet
    metadata:
      name: nri-podnet
      namespace: nrinet-system
    spec:
      template:
        spec:
          containers:
          - name: nri-podnet
            volumeMounts:
            - mountPath: /var/lib/kubelet/plugins
              $patch: delete
            - mountPath: /var/lib/kubelet/plugins_registry
              $patch: delete
            - name: kubelet-plugins
              mountPath: %[5]q
          volumes:
          - name: kubelet-registry
            $patch: delete
          - name: kubelet-plugins
            hostPath:
              path: %[5]q
              type: Directory
`, data.String(), i+1, args[i+1], filepath.Join(kubelets, "$(NODE_NAME)"), kubelets)
	return cp.writePodnetOverlay(podnetOverlaySpec{name: "podnet-multinet-overlay", base: "nri-podnet-multinetwork", direct: direct, patches: patches})
}

// sliceTimeout bounds how long the driver takes to publish a node's
// ResourceSlice once its pod is Ready.
const sliceTimeout = 30 * time.Second

// waitResourceSlice waits until the node's ResourceSlice of the driver
// (pool: the Node's name) lists exactly the plan's networks of the node,
// each with its attributes, bridge and macvlan ones shareable.
func (n *kubeNode) waitResourceSlice(suffix string) {
	t := n.t
	t.Helper()
	want := map[string]string{}
	for _, nw := range multinetPlan {
		if _, ok := nw.own[suffix]; ok {
			want[nw.name] = nw.kind
		}
	}
	waitFor(t, "Node "+n.name+"'s ResourceSlice of "+draDriver, sliceTimeout, 250*time.Millisecond, func() (bool, string) {
		list, err := n.cp.client.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{
			FieldSelector: "spec.nodeName=" + n.name + ",spec.driver=" + draDriver})
		if err != nil {
			return false, err.Error()
		}
		got := map[string]string{}
		var problems []string
		for _, s := range list.Items {
			if s.Spec.Pool.Name != n.name {
				problems = append(problems, "pool "+s.Spec.Pool.Name)
			}
			for _, d := range s.Spec.Devices {
				kind := d.Attributes["kind"].StringValue
				network := d.Attributes["network"].StringValue
				if kind == nil || network == nil || *network != d.Name {
					problems = append(problems, "device "+d.Name+" without its attributes")
					continue
				}
				shared := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
				if shared != (*kind != "host") {
					problems = append(problems, fmt.Sprintf("device %s (%s): allowMultipleAllocations %v", d.Name, *kind, shared))
				}
				got[d.Name] = *kind
			}
		}
		return len(problems) == 0 && fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("devices %v, want %v; %v", got, want, problems)
	})
}
