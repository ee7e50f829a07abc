package podnet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/ipam"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/plugins/podnet/hostport"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// Info keys nri-podnet puts into the networks it returns.
const (
	InfoBridge   = "podnet.nrinet.io/bridge"
	InfoHostVeth = "podnet.nrinet.io/host-veth"
	InfoCheck    = "podnet.nrinet.io/check"
)

// Plugin is the nri-podnet handler. It implements the plugin library's
// Configure, Synchronize, RunPodSandboxNetwork, PodSandboxStatus,
// StopPodSandbox and Shutdown handlers.
type Plugin struct {
	log *slog.Logger

	mu       sync.Mutex // guards the fields below
	cfg      Config
	ipam     *ipam.Allocator
	bridge   netlink.Link
	gateways []netip.Prefix

	guard     *portsec.Guard   // the pods' port security (table bridge nrinet-podnet-portsec-BRIDGE); nil before setup
	hostports *hostport.Mapper // the pods' host ports (nftables table inet nrinet-podnet-hostport); nil before setup

	metrics   *Metrics          // nil: none recorded
	policies  Policies          // nil: no NetworkPolicy engine
	multinet  *multinet.Manager // nil: no secondary networks
	secondary Secondary         // with multinet
	wg        sync.WaitGroup    // background veth deletions
}

var (
	_ plugin.ConfigureHandler            = (*Plugin)(nil)
	_ plugin.SynchronizeHandler          = (*Plugin)(nil)
	_ plugin.RunPodSandboxNetworkHandler = (*Plugin)(nil)
	_ plugin.PodSandboxStatusHandler     = (*Plugin)(nil)
	_ plugin.StopPodSandboxHandler       = (*Plugin)(nil)
	_ plugin.ShutdownHandler             = (*Plugin)(nil)
)

// New returns a plugin. With WithConfig it opens the allocator and sets
// up the bridge at once (unless ctx has ended); otherwise it waits for the
// configuration the runtime sends in Configure.
func New(ctx context.Context, opts ...Option) (*Plugin, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("podnet: %w", err)
	}
	p := &Plugin{log: o.log, metrics: o.metrics, policies: o.policies, multinet: o.multinet, secondary: o.secondary}
	if o.cfg != nil {
		if err := p.setup(*o.cfg); err != nil {
			return nil, err
		}
	}
	if o.metrics != nil {
		if err := o.metrics.bind(p); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// setup opens the allocator and prepares the bridge.
func (p *Plugin) setup(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	icfg, _ := cfg.ipamConfig()
	if err := p.ensureStateDir(cfg.StateDir); err != nil {
		return err
	}
	alloc, err := ipam.Open(filepath.Join(cfg.StateDir, "ipam.db"), icfg, ipam.WithLogger(p.log))
	if err != nil {
		return fmt.Errorf("podnet: %w", err)
	}
	guard, err := portsec.New(cfg.Bridge, HostVethPrefix)
	if err != nil {
		alloc.Close()
		return fmt.Errorf("podnet: %w", err)
	}
	if cfg.NoPortSecurity {
		if err := guard.Uninstall(); err != nil {
			alloc.Close()
			return err
		}
		p.log.Warn("port security is off (noPortSecurity): pods may send in other pods' names, tagged frames and router advertisements, past the node's NetworkPolicies")
	}
	gws := alloc.Gateways()
	br, err := ensureBridge(cfg.Bridge, gws, cfg.MTU, !cfg.NoBridgeNetfilter, p.log)
	if err != nil {
		alloc.Close()
		return fmt.Errorf("podnet: %w", err)
	}
	hp, err := p.hostPortMapper(cfg)
	if err != nil {
		alloc.Close()
		return err
	}
	p.mu.Lock()
	p.cfg, p.ipam, p.bridge, p.gateways, p.guard, p.hostports = cfg, alloc, br, gws, guard, hp
	p.mu.Unlock()
	p.log.Info("pod network ready", "bridge", cfg.Bridge, "subnets", cfg.Subnets, "state", cfg.StateDir)
	return nil
}

// ensureStateDir creates the state directory with mode 0700, or takes
// every permission of group and others, and the setuid, setgid and sticky
// bits, off an existing one (1777 becomes 0700): the allocator's database
// says which pod has which address, and nobody else may replace it.
func (p *Plugin) ensureStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("podnet: state directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("podnet: state directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("podnet: state directory %s is not a directory", dir)
	}
	if mode := fi.Mode() &^ fs.ModeDir; mode&^0o700 != 0 {
		tight := mode & 0o700
		if err := os.Chmod(dir, tight); err != nil {
			return fmt.Errorf("podnet: tightening state directory %s from %v to %v: %w", dir, mode, tight, err)
		}
		p.log.Warn("tightened the state directory's mode", "dir", dir, "was", mode.String(), "now", tight.String())
	}
	return nil
}

// Configure takes the runtime's configuration when the plugin has none of
// its own (WithConfig); one it has takes precedence, and the runtime's is
// then ignored, with a log line.
func (p *Plugin) Configure(_ context.Context, config, runtime, version string) (api.EventMask, error) {
	p.mu.Lock()
	ready := p.ipam != nil
	p.mu.Unlock()
	if ready {
		if config != "" {
			p.log.Info("ignoring the runtime's configuration: the plugin's own takes precedence", "runtime", runtime)
		}
		return 0, nil
	}
	if config == "" {
		return 0, errors.New("podnet: no configuration: give -config or a configuration file in the runtime's conf.d")
	}
	cfg, err := FromBytes([]byte(config))
	if err != nil {
		return 0, err
	}
	return 0, p.setup(cfg)
}

// portGuard returns the port security guard (set up with the bridge).
func (p *Plugin) portGuard() *portsec.Guard {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.guard
}

// portMapper returns the host port mapper (set up with the bridge); nil
// before.
func (p *Plugin) portMapper() *hostport.Mapper {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hostports
}

// state returns what the handlers need, or an error before setup.
func (p *Plugin) state() (Config, *ipam.Allocator, netlink.Link, []netip.Prefix, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ipam == nil {
		return Config{}, nil, nil, nil, errors.New("podnet: not configured")
	}
	return p.cfg, p.ipam, p.bridge, p.gateways, nil
}

// Synchronize releases the addresses of pods that no longer exist and
// deletes their host veths, and any other host veth of nri-podnet's naming
// on the bridge that belongs to no existing pod (left behind by a plugin
// killed between releasing a pod's addresses and deleting its veth). Pods
// that exist keep theirs. It then replaces the host port rules with those
// of the existing pods that hold addresses (their port mappings come with
// them), so that the rules of pods that are gone go and those of live pods
// are kept or restored. It runs on every (re)join.
func (p *Plugin) Synchronize(ctx context.Context, pods []*api.PodSandbox, _ []*api.Container) (_ []*api.ContainerUpdate, err error) {
	defer p.metrics.observe(OpSync, time.Now(), &err)
	defer p.metrics.Reconciled(ReconcileSync)
	cfg, alloc, _, _, err := p.state()
	if err != nil {
		return nil, err
	}
	live := make(map[string]bool, len(pods))
	liveVeths := make(map[string]bool, len(pods))
	for _, pod := range pods {
		live[pod.GetId()] = true
		liveVeths[hostVethName(pod.GetId())] = true
	}
	released, err := alloc.ReleaseExcept(ctx, func(owner string) bool { return live[owner] })
	if err != nil {
		return nil, fmt.Errorf("podnet: reconciling allocations: %w", err)
	}
	stale := make(map[string]string, len(released)) // host veth → pod ID, if known
	for _, id := range released {
		stale[hostVethName(id)] = id
	}
	ports, err := bridgePorts(cfg.Bridge)
	if err != nil {
		p.log.Warn("listing the bridge's ports to find stray veths", "error", err)
	}
	for _, name := range ports {
		if _, ok := stale[name]; !ok && isHostVethName(name) && !liveVeths[name] {
			stale[name] = ""
		}
	}
	for name, id := range stale {
		if err := deleteHostVeth(name); err != nil {
			p.log.Warn("deleting the veth of a pod that is gone", "sandbox", id, "veth", name, "error", err)
		}
	}
	if len(released) > 0 || len(stale) > len(released) {
		p.log.Info("released the addresses and veths of pods that no longer exist",
			"pods", len(released), "strayVeths", len(stale)-len(released))
	}
	if p.multinet != nil {
		gone, err := p.multinet.Sync(ctx, func(owner string) bool { return live[owner] })
		if err != nil {
			p.log.Warn("detaching the secondary interfaces of pods that are gone", "error", err)
		}
		if len(gone) > 0 {
			p.log.Info("detached the secondary interfaces of pods that no longer exist", "pods", len(gone))
		}
	}
	// The host ports of the pods that still hold addresses, from the
	// mappings the runtime sends; every other pod's rules go.
	if err := p.syncHostPorts(pods, alloc.Lookup); err != nil {
		return nil, err
	}
	if !cfg.NoPortSecurity {
		if err := p.syncPorts(pods, alloc.Lookup); err != nil {
			return nil, err
		}
	}
	if p.policies != nil {
		var local []PolicyPod
		for _, pod := range pods {
			if addrs, ok, err := alloc.Lookup(pod.GetId()); err == nil && ok {
				local = append(local, localPod(pod, addrs))
			}
		}
		if err := p.policies.SyncPods(ctx, local); err != nil {
			return nil, fmt.Errorf("podnet: %w", err)
		}
	}
	return nil, nil
}

// localPod describes a pod with the addresses it holds for the
// NetworkPolicy engine: those it was given, and with IPv6 its eth0's
// link-local address, which the kernel makes from eth0's MAC (EUI-64),
// so that a pod isolated by its policies is isolated over its link-local
// address too.
func localPod(pod *api.PodSandbox, addrs []netip.Prefix) PolicyPod {
	lp := PolicyPod{ID: pod.GetId(), Namespace: pod.GetNamespace(), Name: pod.GetName(), UID: pod.GetUid(), Labels: pod.GetLabels()}
	v6 := false
	for _, a := range addrs {
		lp.IPs = append(lp.IPs, a.Addr())
		v6 = v6 || a.Addr().Is6()
	}
	if v6 {
		lp.IPs = append(lp.IPs, portsec.LinkLocal(podMAC(pod.GetId())))
	}
	return lp
}

// RunPodSandboxNetwork allocates the pod's addresses, wires eth0 and
// publishes the pod's host ports. If any of it fails, nothing of the pod
// is left: a host port another pod holds fails it with a
// [*hostport.ConflictError] that names both pods.
func (p *Plugin) RunPodSandboxNetwork(ctx context.Context, pod *api.PodSandbox) (_ *api.PodSandboxNetwork, err error) {
	path := pod.NetNSPath()
	if path == "" {
		// Host network: not ours, unless it asks for secondary
		// networks, which it cannot have.
		return nil, p.refuseHostNetwork(ctx, pod)
	}
	defer p.metrics.observe(OpSetup, time.Now(), &err)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("podnet: pod %s/%s: network namespace %q: %w", pod.GetNamespace(), pod.GetName(), path, err)
	}
	cfg, alloc, br, gws, err := p.state()
	if err != nil {
		return nil, err
	}
	id := pod.GetId()
	link := podLink{
		netnsPath: path, hostName: hostVethName(id), mac: podMAC(id), mtu: cfg.MTU,
		bridge: br, gateways: gws,
	}
	pns, err := openPodNS(path)
	if err != nil {
		return nil, fmt.Errorf("podnet: pod %s/%s: %w", pod.GetNamespace(), pod.GetName(), err)
	}
	defer pns.Close()
	// The allocation (a disk write) and the veth pair (kernel work) need
	// nothing of each other: they run at once, and both are waited for.
	type allocation struct {
		addrs []netip.Prefix
		err   error
	}
	allocated := make(chan allocation, 1)
	go func() {
		addrs, err := alloc.Allocate(ctx, id)
		allocated <- allocation{addrs, err}
	}()
	err = pns.createPair(link)
	a := <-allocated
	link.addrs = a.addrs
	// The port's guard before eth0 is up and so before the pod's first
	// frame (until then the port, unknown to the guard, passes nothing).
	if err == nil && a.err == nil && !cfg.NoPortSecurity {
		err = p.portGuard().Add(p.port(pod, link.addrs))
	}
	if err == nil && a.err == nil {
		err = pns.configure(link)
	}
	if err == nil && a.err == nil {
		err = p.publish(pod, link.addrs)
	}
	// The pod's policies in the kernel before its first packet: before
	// RunPodSandbox returns, and so before any container starts.
	if err == nil && a.err == nil && p.policies != nil {
		if err = p.policies.SetPod(ctx, localPod(pod, link.addrs)); err != nil {
			p.policies.RemovePod(id)
		}
	}
	// The secondary interfaces, before any container starts too.
	var secondary []multinet.Interface
	if err == nil && a.err == nil {
		if secondary, err = p.attachSecondary(ctx, pod); err != nil && p.policies != nil {
			p.policies.RemovePod(id)
		}
	}
	if err != nil || a.err != nil {
		// Give the addresses back, and the half-built veth, even if the
		// setup failed because the request's deadline passed; no host
		// port rule may point at them.
		if herr := p.portMapper().Remove(id); herr != nil {
			p.log.Warn("removing host ports after a failed setup", "pod", podName(pod), "sandbox", id, "error", herr)
		}
		if gerr := p.portGuard().Remove(id); gerr != nil {
			p.log.Warn("removing the port's guard after a failed setup", "pod", podName(pod), "sandbox", id, "error", gerr)
		}
		if derr := deleteHostVeth(link.hostName); derr != nil {
			p.log.Warn("deleting the veth after a failed setup", "pod", podName(pod), "sandbox", id, "error", derr)
		}
		if a.err == nil {
			if rerr := alloc.Release(context.WithoutCancel(ctx), id); rerr != nil {
				p.log.Warn("releasing addresses after a failed setup", "pod", podName(pod), "sandbox", id, "error", rerr)
			}
		}
		return nil, fmt.Errorf("podnet: pod %s/%s: %w", pod.GetNamespace(), pod.GetName(), errors.Join(a.err, err))
	}
	addrs := link.addrs
	p.log.Debug("pod network set up", "pod", podName(pod), "sandbox", id, "addresses", addrs)
	n := p.network(cfg, id, addrs, gws)
	addSecondary(n, secondary)
	return n, nil
}

// network describes a pod's network as nri-podnet set it up.
func (p *Plugin) network(cfg Config, id string, addrs, gws []netip.Prefix) *api.PodSandboxNetwork {
	itf := &api.NetworkInterface{Name: podIfName, Mac: podMAC(id).String(), Mtu: uint32(cfg.MTU)}
	n := &api.PodSandboxNetwork{
		Interfaces: []*api.NetworkInterface{itf},
		Info:       map[string]string{InfoBridge: cfg.Bridge, InfoHostVeth: hostVethName(id)},
	}
	for _, a := range addrs {
		itf.Addresses = append(itf.Addresses, a.String())
		n.Ips = append(n.Ips, a.Addr().String())
		for _, gw := range gws {
			if gw.Addr().Is4() == a.Addr().Is4() {
				dst := "0.0.0.0/0"
				if !a.Addr().Is4() {
					dst = "::/0"
				}
				n.Routes = append(n.Routes, &api.NetworkRoute{Destination: dst, Gateway: gw.Addr().String(), Interface: podIfName})
			}
		}
	}
	return n
}

// PodSandboxStatus reports the pod's network from the allocator; verbose
// also checks that eth0 still exists and is up.
func (p *Plugin) PodSandboxStatus(_ context.Context, pod *api.PodSandbox, verbose bool) (_ *api.PodSandboxNetwork, err error) {
	defer p.metrics.observe(OpStatus, time.Now(), &err)
	cfg, alloc, _, gws, err := p.state()
	if err != nil {
		return nil, err
	}
	addrs, ok, err := alloc.Lookup(pod.GetId())
	if err != nil {
		return nil, fmt.Errorf("podnet: %w", err)
	}
	if !ok {
		return nil, nil // not ours (host network, or stopped)
	}
	n := p.network(cfg, pod.GetId(), addrs, gws)
	if p.multinet != nil {
		itfs, err := p.multinet.Interfaces(pod.GetId())
		if err != nil {
			return nil, fmt.Errorf("podnet: %w", err)
		}
		addSecondary(n, itfs)
	}
	if verbose {
		if err := checkPod(pod.NetNSPath()); err != nil {
			n.Info[InfoCheck] = err.Error()
		} else {
			n.Info[InfoCheck] = "ok"
		}
	}
	return n, nil
}

// StopPodSandbox removes the pod's host port rules, takes its addresses
// off eth0, releases them and deletes its veth. The deletion runs in the background: the kernel's veth teardown takes tens
// of milliseconds and nothing waits for it (the runtime deletes the
// namespace next, which would remove the pod end anyway).
func (p *Plugin) StopPodSandbox(ctx context.Context, pod *api.PodSandbox) (err error) {
	if pod.NetNSPath() != "" {
		defer p.metrics.observe(OpTeardown, time.Now(), &err)
	}
	_, alloc, _, _, err := p.state()
	if err != nil {
		return err
	}
	id := pod.GetId()
	// The secondary interfaces first. One that cannot be undone does not
	// hold up eth0's teardown: it stays recorded, the error is returned
	// after the rest, and the next StopPodSandbox (or, once the pod is
	// gone, Synchronize) retries.
	secErr := p.detachSecondary(ctx, pod)
	// No host port rule may point at an address given back.
	if err := p.portMapper().Remove(id); err != nil {
		return fmt.Errorf("podnet: pod %s/%s: %w", pod.GetNamespace(), pod.GetName(), err)
	}
	// Take the addresses off eth0 before they go back to the allocator,
	// so that they are never free and in use at once.
	if addrs, ok, err := alloc.Lookup(id); err == nil && ok {
		if err := flushPodAddrs(pod.NetNSPath(), addrs); err != nil {
			return fmt.Errorf("podnet: pod %s/%s: %w", pod.GetNamespace(), pod.GetName(), err)
		}
		// The connections the node tracked for the addresses go with
		// them: a flow of this pod must not pass as established for the
		// next pod to get an address (and past that pod's policies).
		if err := deleteConntrack(addrs); err != nil {
			p.log.Warn("deleting the tracked connections of a pod's addresses", "pod", podName(pod), "sandbox", id, "addresses", addrs, "error", err)
		}
	}
	// The pod's policies go once it has no address (so that it is never
	// unisolated while it can still send), before the addresses can go to
	// another pod.
	if p.policies != nil {
		p.policies.RemovePod(id)
	}
	if err := alloc.Release(ctx, id); err != nil {
		return fmt.Errorf("podnet: pod %s/%s: releasing addresses: %w", pod.GetNamespace(), pod.GetName(), err)
	}
	// The port's guard goes after the addresses (nothing between taking
	// them off eth0 and releasing them widens the window a kill leaves a
	// stopped pod holding them); its veth, until deleted, then passes
	// nothing (an unknown port). A guard left by a kill here is replaced
	// at the next Synchronize.
	if err := p.portGuard().Remove(id); err != nil {
		p.log.Warn("removing the port's guard", "pod", podName(pod), "sandbox", id, "error", err)
	}
	name := hostVethName(id)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := deleteHostVeth(name); err != nil {
			p.log.Warn("deleting pod veth", "pod", podName(pod), "sandbox", id, "veth", name, "error", err)
		}
	}()
	return secErr
}

// Shutdown waits for pending veth deletions.
func (p *Plugin) Shutdown(context.Context) { p.wg.Wait() }

// Close waits for pending work and closes the allocator.
func (p *Plugin) Close() error {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ipam == nil {
		return nil
	}
	err := p.ipam.Close()
	p.ipam = nil
	return err
}

// Allocations lists the pods that hold addresses, sorted.
func (p *Plugin) Allocations() ([]string, error) {
	_, alloc, _, _, err := p.state()
	if err != nil {
		return nil, err
	}
	owners, err := alloc.Owners()
	slices.Sort(owners)
	return owners, err
}
