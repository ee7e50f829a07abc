package kube

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RouteProtocol marks the routes a [Router] owns: the rtnetlink protocol
// field ("proto 78" in `ip route`; `ip route show proto 78` lists them).
// 78 is assigned to nothing in the kernel's rtnetlink.h nor in iproute2's
// rt_protos; a Router reads, changes and deletes only routes of the main
// table that carry it.
const RouteProtocol netlink.RouteProtocol = 78

// Router keeps the routes to other nodes' pod CIDRs in one network
// namespace: routes of the main table marked with [RouteProtocol].
// Its methods are not safe for concurrent use; a [Watcher] calls them
// from one goroutine.
type Router struct {
	h   *netlink.Handle
	log *slog.Logger
}

// RouterOption configures a [Router].
type RouterOption func(*Router) error

// WithRouterHandle makes the Router work through h, a netlink handle of
// the namespace to route in (netlink.NewHandleAt), instead of the calling
// process's namespace. The caller closes h.
func WithRouterHandle(h *netlink.Handle) RouterOption {
	return func(r *Router) error {
		if h == nil {
			return errors.New("kube: WithRouterHandle: nil handle")
		}
		r.h = h
		return nil
	}
}

// WithRouterLogger gives the Router a logger for the routes it skips and
// changes (default: none).
func WithRouterLogger(l *slog.Logger) RouterOption {
	return func(r *Router) error {
		if l == nil {
			return errors.New("kube: WithRouterLogger: nil logger")
		}
		r.log = l
		return nil
	}
}

// NewRouter returns a Router of the calling process's network namespace,
// or of WithRouterHandle's.
func NewRouter(opts ...RouterOption) (*Router, error) {
	r := &Router{h: &netlink.Handle{}, log: slog.New(slog.DiscardHandler)} // the zero Handle works in the current namespace
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// list returns the main table's routes, ours and the others, both
// families. A dump interrupted by a concurrent change is retried.
func (r *Router) list() (ours, others []netlink.Route, err error) {
	var all []netlink.Route
	for range 5 {
		all, err = r.h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("kube: listing routes: %w", err)
	}
	for _, rt := range all {
		if rt.Protocol == RouteProtocol {
			ours = append(ours, rt)
		} else {
			others = append(others, rt)
		}
	}
	return ours, others, nil
}

// Routes lists the routes the Router owns, sorted by destination; those
// it cannot express as a Route (no gateway, multipath: none of its own
// making) are left out.
func (r *Router) Routes() ([]Route, error) {
	ours, _, err := r.list()
	if err != nil {
		return nil, err
	}
	var out []Route
	for _, rt := range ours {
		if x, ok := fromNetlink(rt); ok {
			out = append(out, x)
		}
	}
	slices.SortFunc(out, func(a, b Route) int { return comparePrefix(a.Dst, b.Dst) })
	return out, nil
}

func fromNetlink(rt netlink.Route) (Route, bool) {
	if rt.Dst == nil || rt.Gw == nil {
		return Route{}, false
	}
	dst, ok1 := prefixOf(rt.Dst)
	gw, ok2 := netip.AddrFromSlice(rt.Gw)
	if !ok1 || !ok2 {
		return Route{}, false
	}
	return Route{Dst: dst, Via: gw.Unmap()}, true
}

// Sync makes the Router's routes exactly want: it adds or replaces what
// is missing or goes via another gateway, and deletes its routes to
// destinations no longer wanted. A wanted destination that a route of
// someone else's (another protocol) already covers with the same prefix
// is left alone and reported in the error. It goes on after an error and
// returns them all, joined; changed says whether it changed anything.
func (r *Router) Sync(want []Route) (changed bool, err error) {
	ours, others, err := r.list()
	if err != nil {
		return false, err
	}
	var errs []error
	// The kernel's routes by destination: ours as they are (one each,
	// single path) and the others' protocols, so that each wanted route
	// is looked up once.
	have := make(map[netip.Prefix]Route, len(ours))
	for _, rt := range ours {
		if x, ok := fromNetlink(rt); ok && rt.MultiPath == nil {
			have[x.Dst] = x
		}
	}
	foreign := make(map[netip.Prefix]netlink.RouteProtocol, len(others))
	for _, rt := range others {
		if rt.Dst == nil {
			continue
		}
		if dst, ok := prefixOf(rt.Dst); ok {
			foreign[dst] = rt.Protocol
		}
	}
	wanted := make(map[netip.Prefix]bool, len(want))
	for _, w := range want {
		wanted[w.Dst] = true
		if proto, ok := foreign[w.Dst]; ok {
			errs = append(errs, fmt.Errorf("kube: route %s: a route to %s of protocol %s is there, not nri-podnet's: left alone", w, w.Dst, proto))
			continue
		}
		if x, ok := have[w.Dst]; ok && x.Via == w.Via {
			continue
		}
		rt := &netlink.Route{
			Dst:      prefixNet(w.Dst),
			Gw:       net.IP(w.Via.AsSlice()),
			Protocol: RouteProtocol,
			Table:    unix.RT_TABLE_MAIN,
		}
		if err := r.h.RouteReplace(rt); err != nil {
			errs = append(errs, fmt.Errorf("kube: adding route %s: %w", w, err))
			continue
		}
		changed = true
		r.log.Info("route to another node's pods set", "route", w.String())
	}
	for _, rt := range ours {
		x, ok := fromNetlink(rt)
		if ok && wanted[x.Dst] {
			continue
		}
		if err := r.h.RouteDel(&rt); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("kube: deleting route %s: %w", rt, err))
			continue
		}
		changed = true
		r.log.Info("route to another node's pods deleted", "route", rt.String())
	}
	return changed, errors.Join(errs...)
}

// Remove deletes every route the Router owns, and reports how many.
func (r *Router) Uninstall() (int, error) {
	ours, _, err := r.list()
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, rt := range ours {
		if err := r.h.RouteDel(&rt); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("kube: deleting route %s: %w", rt, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// prefixOf is a route destination as a prefix.
func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	ones, _ := n.Mask.Size()
	a, ok := netip.AddrFromSlice(n.IP)
	return netip.PrefixFrom(a.Unmap(), ones), ok
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
