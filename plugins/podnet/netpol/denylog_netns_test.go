package netpol_test

import (
	"context"
	"log/slog"
	"maps"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

// lines is a slog.Handler that keeps each record's message and
// attributes; with gate, its first Handle closes entered and waits for
// gate to close.
type lines struct {
	mu      sync.Mutex
	recs    []map[string]string
	gate    chan struct{}
	entered chan struct{}
	first   sync.Once
}

func (h *lines) Enabled(context.Context, slog.Level) bool { return true }
func (h *lines) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *lines) WithGroup(string) slog.Handler            { return h }

func (h *lines) Handle(_ context.Context, r slog.Record) error {
	if h.gate != nil {
		h.first.Do(func() {
			close(h.entered)
			<-h.gate
		})
	}
	rec := map[string]string{"msg": r.Message, "level": r.Level.String()}
	var keys []string
	r.Attrs(func(a slog.Attr) bool {
		rec[a.Key] = a.Value.String()
		keys = append(keys, a.Key)
		return true
	})
	rec["keys"] = strings.Join(keys, " ") // their order
	h.mu.Lock()
	h.recs = append(h.recs, rec)
	h.mu.Unlock()
	return nil
}

func (h *lines) all() []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]map[string]string, len(h.recs))
	for i, r := range h.recs {
		out[i] = maps.Clone(r)
	}
	return out
}

// logTestNet is a test network whose Enforcer logs denied packets with
// ld, and a DenyLog (of socket buffer readBuffer, 0: the default)
// writing to h.
func logTestNet(t *testing.T, ld netpol.LogDenied, h *lines, readBuffer int) (*testNet, *netpol.DenyLog) {
	t.Helper()
	n := newTestNet(t, "a", "b", "c")
	var err error
	if n.enf, err = netpol.New(netpol.WithNetNS(n.nodeFD), netpol.WithLogDenied(ld)); err != nil {
		t.Fatal(err)
	}
	var dl *netpol.DenyLog
	if readBuffer == 0 {
		dl, err = n.enf.OpenDenyLog(slog.New(h))
	} else {
		dl, err = n.enf.OpenDenyLogBuffer(slog.New(h), readBuffer)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dl.Close(); err != nil {
			t.Error(err)
		}
	})
	return n, dl
}

func logPods(n *testNet) []netpol.Pod {
	return []netpol.Pod{
		{Namespace: "prod", Name: "a", Labels: map[string]string{"app": "a"}, IPs: n.pods["a"].ips, Local: true},
		{Namespace: "prod", Name: "b", Labels: map[string]string{"app": "b"}, IPs: n.pods["b"].ips, Local: true},
		{Namespace: "prod", Name: "c", Labels: map[string]string{"app": "c"}, IPs: n.pods["c"].ips, Local: true},
	}
}

// TestDenyLog: a denied packet, of either direction and family, makes
// one log line naming its source, destination and port, the direction,
// the pod and the policies isolating it; the rate limit bounds the lines
// (the kernel counts the packets it kept from the log), and a packet
// allowed makes none.
func TestDenyLog(t *testing.T) {
	h := &lines{}
	n, _ := logTestNet(t, netpol.LogDenied{Group: 7, Rate: 1, Per: time.Minute, Burst: 3}, h, 0)
	bFromA := policy("prod", "b-from-a", map[string]string{"app": "b"}, nil,
		[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}},
			Ports: []networkingv1.NetworkPolicyPort{tcpPort(8080)}}}, nil)
	cOut := policy("prod", "c-out", map[string]string{"app": "c"}, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, nil, nil)
	n.apply([]*networkingv1.NetworkPolicy{bFromA, cOut}, nil, logPods(n))

	if !n.reach(n.pods["a"], n.pods["b"].ips[0], "tcp", 8080) {
		t.Fatal("a did not reach b on 8080/tcp")
	}
	n.sendUDP(n.pods["a"], n.pods["b"].ips[0], 9090, 1)
	if n.reach(n.pods["c"], n.pods["a"].ips[1], "tcp", 8080) {
		t.Fatal("c reached a, its egress isolated")
	}
	testutil.WaitFor(t, "two lines", 5*time.Second, func() bool { return len(h.all()) >= 2 })
	msg := "NetworkPolicy denied a packet: no policy allows it"
	keys := "src dst port direction pod isolatedBy"
	want := []map[string]string{
		{"msg": msg, "level": "INFO", "keys": keys, "src": n.pods["a"].ips[0].String(), "dst": n.pods["b"].ips[0].String(), "port": "9090/udp",
			"direction": "ingress", "pod": "prod/b", "isolatedBy": "prod/b-from-a"},
		{"msg": msg, "level": "INFO", "keys": keys, "src": n.pods["c"].ips[1].String(), "dst": n.pods["a"].ips[1].String(), "port": "8080/tcp",
			"direction": "egress", "pod": "prod/c", "isolatedBy": "prod/c-out"},
	}
	got := h.all()
	for i := range want {
		if !maps.Equal(got[i], want[i]) {
			t.Errorf("line %d = %v, want %v", i, got[i], want[i])
		}
	}

	// A burst of 3 at most: the 3rd packet denied is logged, the others
	// counted as unlogged.
	n.sendUDP(n.pods["a"], n.pods["b"].ips[1], 9090, 10)
	var c netpol.Counters
	testutil.WaitFor(t, "the burst counted", 5*time.Second, func() bool {
		c = counters(t, n.enf)
		var denied uint64
		for _, d := range c.Denied {
			denied += d.Packets
		}
		return denied >= 12 && c.Logged == 3 && c.Unlogged == denied-3 && len(h.all()) == 3
	})
	if !c.Logging || c.LogOverruns != 0 {
		t.Errorf("Counters = %+v, want logging on and no overruns", c)
	}
	if l := h.all()[2]; l["port"] != "9090/udp" || l["dst"] != n.pods["b"].ips[1].String() {
		t.Errorf("third line = %v, want a's first packet of the burst to b's %s", l, n.pods["b"].ips[1])
	}
}

// TestDenyLog_Overrun: while the log's reader is held up, a burst of
// denied packets overflows its socket; the kernel's drop is counted as an
// overrun, and the reader goes on: the next denied packet is logged.
func TestDenyLog_Overrun(t *testing.T) {
	h := &lines{gate: make(chan struct{}), entered: make(chan struct{})}
	n, dl := logTestNet(t, netpol.LogDenied{Group: 65535, Rate: 1, Per: time.Second, Burst: netpol.MaxLogBurst}, h, 1)
	n.apply([]*networkingv1.NetworkPolicy{policy("prod", "b-deny", map[string]string{"app": "b"}, nil, nil, nil)}, nil, logPods(n))

	n.sendUDP(n.pods["a"], n.pods["b"].ips[0], 9090, 1)
	select {
	case <-h.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no line for the first denied packet")
	}
	n.sendUDP(n.pods["a"], n.pods["b"].ips[0], 9090, 300)
	close(h.gate)
	testutil.WaitFor(t, "an overrun", 5*time.Second, func() bool { return counters(t, n.enf).LogOverruns > 0 })
	n.sendUDP(n.pods["a"], n.pods["b"].ips[1], 8080, 1)
	testutil.WaitFor(t, "a line after the overrun", 5*time.Second, func() bool {
		for _, l := range h.all() {
			if l["port"] == "8080/udp" && l["dst"] == n.pods["b"].ips[1].String() {
				return true
			}
		}
		return false
	})
	c := counters(t, n.enf)
	if c.Logged >= 302 {
		t.Errorf("Logged = %d of 302 packets: nothing was lost", c.Logged)
	}
	if err := dl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dl.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestOpenDenyLog_Refused: a DenyLog needs an Enforcer that logs, at a
// rate per second, minute, hour or day and a burst of at most
// MaxLogBurst (the extremes of which the kernel takes), and a group no
// other socket of the namespace reads.
func TestOpenDenyLog_Refused(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	fd := netnsFD(t, "nrnd"+randHex(4))
	plain, err := netpol.New(netpol.WithNetNS(fd))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.OpenDenyLog(slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "WithLogDenied") {
		t.Errorf("OpenDenyLog without WithLogDenied: %v", err)
	}
	for _, ld := range []netpol.LogDenied{{Rate: 0, Per: time.Second}, {Rate: 1, Per: time.Millisecond}, {Rate: 1, Per: 7 * 24 * time.Hour}, {Rate: 1, Per: time.Second, Burst: netpol.MaxLogBurst + 1}} {
		if _, err := netpol.New(netpol.WithLogDenied(ld)); err == nil {
			t.Errorf("WithLogDenied(%+v) accepted", ld)
		}
	}
	// The extremes of the rate and burst: the kernel takes them.
	prog, err := netpol.Compile([]*networkingv1.NetworkPolicy{policy("prod", "deny", nil, nil, nil, nil)}, nil,
		[]netpol.Pod{{Namespace: "prod", Name: "a", IPs: []netip.Addr{netip.MustParseAddr("198.18.5.1")}, Local: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ld := range []netpol.LogDenied{{Rate: 1, Per: 24 * time.Hour, Burst: netpol.MaxLogBurst}, {Rate: 1 << 32, Per: time.Second, Burst: netpol.MaxLogBurst}} {
		e, err := netpol.New(netpol.WithNetNS(fd), netpol.WithLogDenied(ld))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Sync(prog); err != nil {
			t.Errorf("Sync with %+v: %v", ld, err)
		}
	}
	e, err := netpol.New(netpol.WithNetNS(fd), netpol.WithLogDenied(netpol.LogDenied{Group: 9, Rate: 1, Per: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	first, err := e.OpenDenyLog(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if dl, err := e.OpenDenyLog(slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "another program") {
		if dl != nil {
			dl.Close()
		}
		t.Errorf("a second DenyLog of group 9 in the namespace: %v, want an error saying another program reads it", err)
	}
}

// TestDenyLog_BeforeTheFirstApply: a restarted nri-podnet leaves the
// table of the one before it until its first write; a packet that
// table denies meanwhile is logged with its chain, its pod unknown.
func TestDenyLog_BeforeTheFirstApply(t *testing.T) {
	h := &lines{}
	ld := netpol.LogDenied{Group: 11, Rate: 10, Per: time.Second}
	n, dl := logTestNet(t, ld, h, 0)
	n.apply([]*networkingv1.NetworkPolicy{policy("prod", "b-deny", map[string]string{"app": "b"}, nil, nil, nil)}, nil, logPods(n))
	if err := dl.Close(); err != nil { // the first nri-podnet goes
		t.Fatal(err)
	}
	next, err := netpol.New(netpol.WithNetNS(n.nodeFD), netpol.WithLogDenied(ld))
	if err != nil {
		t.Fatal(err)
	}
	dl2, err := next.OpenDenyLog(slog.New(h))
	if err != nil {
		t.Fatal(err)
	}
	defer dl2.Close()
	n.sendUDP(n.pods["a"], n.pods["b"].ips[0], 9090, 1)
	testutil.WaitFor(t, "a line", 5*time.Second, func() bool { return len(h.all()) == 1 })
	l := h.all()[0]
	if l["direction"] != "ingress" || !strings.HasPrefix(l["pod"], "unknown (chain in-") || l["isolatedBy"] != "" || l["port"] != "9090/udp" {
		t.Errorf("line = %v, want an unknown pod's ingress chain", l)
	}
}
