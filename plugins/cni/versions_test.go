package cni_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/cni"
)

// TestCNI_Versions runs the reference plugins (bridge with host-local,
// portmap, bandwidth where NRINET_CNI_BIN has it) and the recorder at
// every cniVersion a CNI user may have: ADD gives the pod its address in
// its netns with lo up, the arguments are containerd's, the port mapping
// reaches portmap (a connection to the host port reaches the pod), the
// bandwidth reaches the bandwidth plugin (its qdisc and ifb device),
// STATUS runs before ADD at 1.1.0, garbage collection (Synchronize)
// removes a pod the runtime no longer has, and DEL leaves nothing behind:
// no veth, no host-local reservation, no libcni cache entry, no iptables
// rule, no ifb device.
func TestCNI_Versions(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	bin := testutil.CNIPluginDir(t)
	_, err := os.Stat(filepath.Join(bin, "bandwidth"))
	hasBandwidth := err == nil
	_, err = exec.LookPath("iptables")
	hasIptables := err == nil
	if !hasBandwidth {
		t.Logf("no bandwidth plugin in %s: not tested", bin)
	}
	if !hasIptables {
		t.Log("no iptables: portmap not tested")
	}
	for i, version := range []string{"0.3.1", "0.4.0", "1.0.0", "1.1.0"} {
		t.Run(version, func(t *testing.T) {
			ctx := context.Background()
			subnet := netip.MustParsePrefix(fmt.Sprintf("198.18.%d.0/24", 110+i))
			gw := fmt.Sprintf("198.18.%d.1", 110+i)
			recDir := t.TempDir()
			tn := newTestNet(t, version, subnet.String())
			if hasBandwidth {
				tn.extra = append(tn.extra, map[string]any{"type": "bandwidth", "capabilities": map[string]bool{"bandwidth": true}})
			}
			tn.extra = append(tn.extra, recorderPlugin(recDir, ""))
			tn.extraBinDirs = []string{recorderBinDir(t)}
			tn.writeConflist(t, "10-nrinet-test.conflist", subnet.String())
			p := newHandler(t, tn)
			binDirs := strings.Join(tn.config().BinDirs, ":")

			hostPort := int32(20000 + rand.IntN(10000))
			a, nsA := newPod(t, 1)
			a.PortMappings = []*api.PortMapping{{Protocol: api.Protocol_PROTOCOL_TCP, ContainerPort: 8080, HostPort: hostPort, HostIp: gw}}
			a.Annotations = map[string]string{"kubernetes.io/ingress-bandwidth": "10M", "kubernetes.io/egress-bandwidth": "20M"}
			b, nsB := newPod(t, 2)
			b.PortMappings = []*api.PortMapping{{Protocol: api.Protocol_PROTOCOL_TCP, ContainerPort: 8080, HostPort: hostPort + 1, HostIp: gw}}
			// Runs before the namespaces are deleted: whatever the test
			// left (a failure, say) is torn down, iptables rules too.
			t.Cleanup(func() {
				for _, pod := range []*api.PodSandbox{a, b} {
					if err := p.StopPodSandbox(ctx, pod); err != nil {
						t.Errorf("cleanup: %v", err)
					}
				}
			})

			// ADD: the address, in the netns, and lo.
			na, err := p.RunPodSandboxNetwork(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			ips := na.GetIps()
			if len(ips) != 1 || !subnet.Contains(netip.MustParseAddr(ips[0])) {
				t.Fatalf("ips = %v, want one in %s", ips, subnet)
			}
			if got := eth0Addrs(t, nsA); !slices.Equal(got, ips) {
				t.Errorf("eth0 in the pod's netns has %v, the plugin reported %v", got, ips)
			}
			if !loUp(t, nsA) {
				t.Error("lo is not up in the pod")
			}
			if got := na.GetInfo()[cni.InfoCNIVersion]; got != version {
				t.Errorf("info %s = %q", cni.InfoCNIVersion, got)
			}

			// STATUS before ADD, at 1.1.0 only; containerd's arguments.
			wantCmds := []string{"ADD"}
			if version == "1.1.0" {
				wantCmds = []string{"STATUS", "ADD"}
			}
			if got := commands(records(t, recDir, "", "")); !slices.Equal(got, wantCmds) {
				t.Errorf("recorder saw %v, want %v", got, wantCmds)
			}
			adds := records(t, recDir, "ADD", a.GetId())
			if len(adds) != 1 {
				t.Fatalf("recorder saw %d ADDs of pod a", len(adds))
			}
			burst := float64(math.MaxUint32)
			checkLikeContainerd(t, adds[0], a, binDirs, map[string]any{
				"io.kubernetes.cri.pod-annotations": map[string]any{"kubernetes.io/ingress-bandwidth": "10M", "kubernetes.io/egress-bandwidth": "20M"},
				"portMappings":                      []any{map[string]any{"HostPort": float64(hostPort), "ContainerPort": 8080.0, "Protocol": "tcp", "HostIP": gw}},
				"bandwidth":                         map[string]any{"IngressRate": 1e7, "IngressBurst": burst, "EgressRate": 2e7, "EgressBurst": burst},
			})

			// portmap: the host port reaches the pod.
			if hasIptables {
				l := listenInNetNS(t, nsA, ":8080")
				served := serveOnce(t, l, "hello from pod a")
				if len(natRules(t, a.GetId())) == 0 {
					t.Errorf("no iptables rule for pod a")
				}
				conn, err := net.DialTimeout("tcp", net.JoinHostPort(gw, fmt.Sprint(hostPort)), 5*time.Second)
				if err != nil {
					t.Fatalf("connecting to the host port: %v", err)
				}
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				got, err := io.ReadAll(conn)
				conn.Close()
				if err != nil || string(got) != "hello from pod a" {
					t.Errorf("read %q, %v through the host port; want the pod's greeting", got, err)
				}
				<-served
			}

			// bandwidth: a tbf qdisc on the host veth, an ifb device.
			var ifb string
			if hasBandwidth {
				ifb = bandwidthIfb(t, adds[0])
				ports := tn.bridgePorts(t)
				if len(ports) != 1 {
					t.Fatalf("bridge ports = %v, want pod a's veth", ports)
				}
				if q := testutil.Run(t, "tc", "qdisc", "show", "dev", ports[0]); !strings.Contains(q, "tbf") {
					t.Errorf("no tbf qdisc on %s:\n%s", ports[0], q)
				}
				if !testutil.LinkExists(ifb) {
					t.Errorf("no ifb device %s", ifb)
				}
			}

			if _, err := p.RunPodSandboxNetwork(ctx, b); err != nil {
				t.Fatal(err)
			}
			st, err := p.PodSandboxStatus(ctx, a, true)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(st.GetIps(), ips) {
				t.Errorf("status ips = %v, want %v", st.GetIps(), ips)
			}
			check := st.GetInfo()[cni.InfoCheck]
			if version == "0.3.1" {
				if !strings.Contains(check, "does not support the CHECK command") {
					t.Errorf("check = %q, want CHECK unsupported", check)
				}
			} else if check != "ok" {
				t.Errorf("check = %q, want ok", check)
			}

			// GC: the runtime has pod a only.
			if _, err := p.Synchronize(ctx, []*api.PodSandbox{a}, nil); err != nil {
				t.Fatal(err)
			}
			if got := records(t, recDir, "DEL", b.GetId()); len(got) != 1 {
				t.Errorf("recorder saw %d DELs of pod b after GC, want 1", len(got))
			}
			if version == "1.1.0" {
				if got := records(t, recDir, "GC", ""); len(got) != 1 {
					t.Errorf("recorder saw %d GCs, want 1", len(got))
				}
			}
			if got := tn.bridgePorts(t); len(got) != 1 {
				t.Errorf("bridge ports after GC = %v, want pod a's only", got)
			}
			if got := tn.addressFiles(t); !slices.Equal(got, ips) {
				t.Errorf("host-local reservations after GC = %v, want pod a's %v", got, ips)
			}
			if got := tn.cacheFiles(t, b.GetId()); len(got) != 0 {
				t.Errorf("libcni cache entries of pod b after GC: %v", got)
			}
			if got := tn.cacheFiles(t, a.GetId()); len(got) != 2 {
				t.Errorf("libcni cache entries of pod a after GC: %v, want its two networks'", got)
			}
			if got := natRules(t, b.GetId()); len(got) != 0 {
				t.Errorf("iptables rules of pod b after GC: %q", got)
			}
			if st, _ := p.PodSandboxStatus(ctx, a, false); !slices.Equal(st.GetIps(), ips) {
				t.Errorf("pod a lost its status to GC: %v", st)
			}

			// DEL.
			if err := p.StopPodSandbox(ctx, a); err != nil {
				t.Fatal(err)
			}
			if got := records(t, recDir, "DEL", a.GetId()); len(got) != 1 {
				t.Errorf("recorder saw %d DELs of pod a, want 1", len(got))
			}
			if got := tn.bridgePorts(t); len(got) != 0 {
				t.Errorf("bridge ports left: %v", got)
			}
			if got := tn.addressFiles(t); len(got) != 0 {
				t.Errorf("host-local reservations left: %v", got)
			}
			if got := tn.cacheFiles(t, ""); len(got) != 0 {
				t.Errorf("libcni cache entries left: %v", got)
			}
			if got := natRules(t, a.GetId()); len(got) != 0 {
				t.Errorf("iptables rules of pod a left: %q", got)
			}
			if ifb != "" && testutil.LinkExists(ifb) {
				t.Errorf("ifb device %s left", ifb)
			}
			for _, ns := range []string{nsA, nsB} {
				testutil.DeleteNetNS(ns)
			}
		})
	}
}

// cacheFiles lists libcni's cache entries (results, config and
// arguments, one file per attachment) whose names contain id.
func (tn *testNet) cacheFiles(t testing.TB, id string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(tn.cacheDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Contains(d.Name(), id) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// natRules returns the rules of the host's iptables nat table that
// mention id (portmap names the container in a comment); none without
// iptables.
func natRules(t testing.TB, id string) []string {
	t.Helper()
	if _, err := exec.LookPath("iptables-save"); err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(testutil.Run(t, "iptables-save", "-t", "nat"), "\n") {
		if strings.Contains(l, id) {
			out = append(out, l)
		}
	}
	return out
}

// bandwidthIfb returns the ifb device the bandwidth plugin created, from
// the previous result the recorder (chained after it) got in ADD.
func bandwidthIfb(t testing.TB, add record) string {
	t.Helper()
	var conf struct {
		PrevResult struct {
			Interfaces []struct {
				Name    string `json:"name"`
				Sandbox string `json:"sandbox"`
			} `json:"interfaces"`
		} `json:"prevResult"`
	}
	if err := json.Unmarshal(add.Stdin, &conf); err != nil {
		t.Fatal(err)
	}
	for _, itf := range conf.PrevResult.Interfaces {
		if strings.HasPrefix(itf.Name, "bwp") && itf.Sandbox == "" {
			return itf.Name
		}
	}
	t.Fatalf("no ifb device in the result: %s", add.Stdin)
	return ""
}

// listenInNetNS listens on addr (TCP) in the named network namespace.
// The listener is closed when the test ends.
func listenInNetNS(t testing.TB, ns, addr string) net.Listener {
	t.Helper()
	var (
		l   net.Listener
		err error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		goruntime.LockOSThread()
		orig, e := netns.Get()
		if e != nil {
			err = e
			goruntime.UnlockOSThread()
			return
		}
		defer orig.Close()
		target, e := netns.GetFromName(ns)
		if e != nil {
			err = e
			goruntime.UnlockOSThread()
			return
		}
		defer target.Close()
		if err = netns.Set(target); err != nil {
			goruntime.UnlockOSThread()
			return
		}
		l, err = net.Listen("tcp", addr)
		// A thread that cannot go back stays locked and ends with the
		// goroutine.
		if netns.Set(orig) == nil {
			goruntime.UnlockOSThread()
		}
	}()
	<-done
	if err != nil {
		t.Fatalf("listening on %s in netns %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// serveOnce answers one connection on l with msg; the channel is closed
// when it has (or the listener was closed).
func serveOnce(t testing.TB, l net.Listener, msg string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write([]byte(msg))
		c.Close()
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return done
}

// TestCNI_StatusFailureFailsPod: at cniVersion 1.1.0 a plugin whose
// STATUS fails keeps pods from being added: the error names the network
// and the plugin and carries the CNI error, and no ADD runs. Once STATUS
// passes, pods are added again.
func TestCNI_StatusFailureFailsPod(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	ctx := context.Background()
	recDir := t.TempDir()
	tn := newTestNet(t, "1.1.0", "198.18.114.0/24")
	tn.noPortmap = true
	tn.extra = []map[string]any{recorderPlugin(recDir, "waiting for the cluster network")}
	tn.extraBinDirs = []string{recorderBinDir(t)}
	tn.writeConflist(t, "10-nrinet-test.conflist", tn.subnets...)
	p := newHandler(t, tn)

	pod, _ := newPod(t, 1)
	_, err := p.RunPodSandboxNetwork(ctx, pod)
	mustContain(t, err, `CNI network "nrinet-test" STATUS failed: plugin type="nrcni-recorder" failed (status): code 50: waiting for the cluster network`)
	var oe *cni.OpError
	if !errors.As(err, &oe) || oe.Op != "STATUS" {
		t.Errorf("error %v is not a STATUS *OpError", err)
	}
	if got := commands(records(t, recDir, "", "")); !slices.Equal(got, []string{"STATUS"}) {
		t.Errorf("recorder saw %v, want STATUS only", got)
	}
	if testutil.LinkExists(tn.bridge) {
		t.Errorf("bridge %s was created: an ADD ran after a failed STATUS", tn.bridge)
	}

	tn.extra = []map[string]any{recorderPlugin(recDir, "")}
	tn.writeConflist(t, "10-nrinet-test.conflist", tn.subnets...)
	if _, err := p.RunPodSandboxNetwork(ctx, pod); err != nil {
		t.Fatalf("after STATUS passes: %v", err)
	}
	if err := p.StopPodSandbox(ctx, pod); err != nil {
		t.Fatal(err)
	}
}
