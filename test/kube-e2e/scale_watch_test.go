package kubee2e

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/userdata"
	mdnetlink "github.com/mdlayher/netlink"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// monitorBuffer is the receive buffer of the watches' netlink sockets: a
// whole NetworkPolicy table written at once is one burst of messages.
const monitorBuffer = 64 << 20

// tableGen is one nftables transaction as a monitor saw it: when it
// arrived, the command name of the process that committed it (the
// kernel reports the committing thread's ID, not the process's), the
// comments of the rules it added and the keys of the set elements it
// added.
type tableGen struct {
	at       time.Time
	comm     string
	comments []string
	added    [][]byte
}

// tableWatch follows the nftables transactions of a network namespace
// (the kernel's NFNLGRP_NFTABLES events) and hands them to the
// expectations registered before the change they wait for.
type tableWatch struct {
	watchState
	lastAt  time.Time
	waiters []*tableWaiter
}

// watchState is what both watches share: the lock of their state and
// the error that ended their monitor, if one did.
type watchState struct {
	mu  sync.Mutex
	err error
}

// await returns the time that arrives on ch, or fails t after patience
// with what did not happen and the monitor's error.
func (w *watchState) await(t testing.TB, ch <-chan time.Time, patience time.Duration, what string) time.Time {
	t.Helper()
	select {
	case at := <-ch:
		return at
	case <-time.After(patience):
	}
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	t.Fatalf("%s within %v (monitor error: %v)", what, patience, err)
	return time.Time{}
}

type tableWaiter struct {
	comm string
	pred func(tableGen) bool
	ch   chan time.Time
}

// watchTables starts following the transactions in the namespace at
// netnsPath; the cleanup stops it.
func watchTables(t testing.TB, netnsPath string) *tableWatch {
	t.Helper()
	f, err := os.Open(netnsPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())), nftables.WithSockOptions(forceReadBuffer))
	if err != nil {
		t.Fatal(err)
	}
	mon := nftables.NewMonitor(nftables.WithMonitorEventBuffer(256))
	events, err := c.AddGenerationalMonitor(mon)
	if err != nil {
		t.Fatalf("nftables monitor in %s: %v", netnsPath, err)
	}
	w := &tableWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			w.handle(ev, time.Now())
		}
	}()
	t.Cleanup(func() {
		mon.Close()
		<-done
		f.Close()
	})
	return w
}

func (w *tableWatch) handle(ev *nftables.MonitorEvents, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev.GeneratedBy.Type == nftables.MonitorEventTypeOOB {
		w.err = ev.GeneratedBy.Error
		return
	}
	g := tableGen{at: at}
	if m, ok := ev.GeneratedBy.Data.(*nftables.GenMsg); ok {
		g.comm = m.ProcComm
	}
	w.lastAt = at
	if len(w.waiters) == 0 {
		return
	}
	for _, ch := range ev.Changes {
		switch ch.Type {
		case nftables.MonitorEventTypeNewRule:
			if r, ok := ch.Data.(*nftables.Rule); ok {
				if c, ok := userdata.GetString(r.UserData, userdata.TypeComment); ok {
					g.comments = append(g.comments, c)
				}
			}
		case nftables.MonitorEventTypeNewSetElem:
			if elems, ok := ch.Data.([]nftables.SetElement); ok {
				for _, e := range elems {
					if !e.IntervalEnd {
						g.added = append(g.added, e.Key)
					}
				}
			}
		}
	}
	kept := w.waiters[:0]
	for _, x := range w.waiters {
		if x.comm == g.comm && x.pred(g) {
			x.ch <- at
			continue
		}
		kept = append(kept, x)
	}
	w.waiters = kept
}

// expect registers a wait for the first transaction from now on of a
// process whose command is bin's base name (as the kernel keeps it: 15
// bytes at most) for which pred holds.
func (w *tableWatch) expect(bin string, pred func(tableGen) bool) *tableWaiter {
	comm := filepath.Base(bin)
	if len(comm) > 15 {
		comm = comm[:15]
	}
	x := &tableWaiter{comm: comm, pred: pred, ch: make(chan time.Time, 1)}
	w.mu.Lock()
	w.waiters = append(w.waiters, x)
	w.mu.Unlock()
	return x
}

// wait returns when x's transaction arrived, failing t after patience.
func (w *tableWatch) wait(t testing.TB, x *tableWaiter, what string, patience time.Duration) time.Time {
	t.Helper()
	return w.await(t, x.ch, patience, fmt.Sprintf("no nftables transaction of %s with %s", x.comm, what))
}

// last is when the last transaction arrived.
func (w *tableWatch) last() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastAt
}

// forceReadBuffer sets the socket's receive buffer to monitorBuffer,
// above the system's maximum (SO_RCVBUFFORCE: the test runs as root).
func forceReadBuffer(c *mdnetlink.Conn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, monitorBuffer)
	}); err != nil {
		return err
	}
	return serr
}

// routeWatch follows the main routing table of a network namespace
// (RTNLGRP_IPV4_ROUTE and _IPV6_ROUTE) and hands route changes to the
// expectations registered before them.
type routeWatch struct {
	watchState
	present map[netip.Prefix]bool
	waiters []*routeWaiter
}

type routeWaiter struct {
	dst     netip.Prefix
	present bool
	ch      chan time.Time
}

func watchRoutes(t testing.TB, netnsPath string) *routeWatch {
	t.Helper()
	h, err := netns.GetFromPath(netnsPath)
	if err != nil {
		t.Fatal(err)
	}
	w := &routeWatch{present: map[netip.Prefix]bool{}}
	updates := make(chan netlink.RouteUpdate, 4096)
	stop := make(chan struct{})
	err = netlink.RouteSubscribeWithOptions(updates, stop, netlink.RouteSubscribeOptions{
		Namespace: &h, ListExisting: true,
		ReceiveBufferSize: monitorBuffer, ReceiveBufferForceSize: true,
		ErrorCallback: func(err error) {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
		},
	})
	if err != nil {
		h.Close()
		t.Fatalf("route monitor in %s: %v", netnsPath, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for u := range updates {
			w.handle(u, time.Now())
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		h.Close()
	})
	return w
}

func (w *routeWatch) handle(u netlink.RouteUpdate, at time.Time) {
	if u.Dst == nil || u.Table != unix.RT_TABLE_MAIN {
		return
	}
	dst, ok := prefixOf(u.Dst)
	if !ok {
		return
	}
	present := u.Type == unix.RTM_NEWROUTE
	w.mu.Lock()
	defer w.mu.Unlock()
	w.present[dst] = present
	kept := w.waiters[:0]
	for _, x := range w.waiters {
		if x.dst == dst && x.present == present {
			x.ch <- at
			continue
		}
		kept = append(kept, x)
	}
	w.waiters = kept
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones), true
}

// expect registers a wait for the route to dst to be there (present) or
// gone; if it already is, the wait ends at once.
func (w *routeWatch) expect(dst netip.Prefix, present bool) *routeWaiter {
	x := &routeWaiter{dst: dst, present: present, ch: make(chan time.Time, 1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.present[dst] == present {
		x.ch <- time.Now()
		return x
	}
	w.waiters = append(w.waiters, x)
	return x
}

func (w *routeWatch) wait(t testing.TB, x *routeWaiter, patience time.Duration) time.Time {
	t.Helper()
	return w.await(t, x.ch, patience, fmt.Sprintf("route to %s not %s", x.dst, map[bool]string{true: "set", false: "deleted"}[x.present]))
}
