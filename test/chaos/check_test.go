package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nrinet/nrinet/internal/testutil"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/ipam"
)

// Patience of the checks that wait for something to settle.
const (
	joinPatience  = 60 * time.Second // nri-podnet relaunched (its backoff reaches 30 s) and joined
	tagPatience   = 30 * time.Second // 20-chaostag reconnected (its backoff reaches 5 s)
	startPatience = 30 * time.Second
	stopPatience  = 20 * time.Second
	gonePatience  = 10 * time.Second // processes exit, veths go away
)

// Info key of nri-podnet naming the pod's host veth.
const hostVethKey = "podnet.nrinet.io/host-veth"

// podnetComm is the name of a launched nri-podnet process: the name of
// the link in the plugin directory it was started through.
const podnetComm = "10-podnet"

// chaosRun is the state of one chaos test.
type chaosRun struct {
	t        *testing.T
	id       string // the run label of every pod
	start    time.Time
	d        *daemon
	cri      criapi.RuntimeServiceClient
	v4, v6   netip.Prefix
	dir      string
	taggerLg *os.File

	// gate is held for reading by each worker operation and for writing
	// while the chaos loop checks: Lock quiesces the workers.
	gate    sync.RWMutex
	workers []*worker

	// trigger, if set, is fired by the next worker that begins an
	// operation of its kind.
	trigger atomic.Pointer[trigger]

	tagger  *taggerProc
	taggers []proc // every incarnation of 20-chaostag

	adopted   atomic.Int64 // pods of RunPodSandbox calls that failed in transit, found later
	lostRuns  atomic.Int64 // RunPodSandbox calls that failed in transit
	refused   atomic.Int64 // RunPodSandbox calls nrinetd answered with an error
	reaped    atomic.Int64 // nri-podnet processes of killed nrinetds, reaped by the test
	okOps     atomic.Int64 // for the progress lines
	failedOps atomic.Int64

	mu         sync.Mutex // guards violations
	violations []string
}

// trigger tells the chaos loop that a worker began an operation.
type trigger struct {
	op    string
	began chan struct{}
}

// begin is called by a worker as it begins an operation of kind op: it
// fires the trigger set for that kind, if any.
func (r *chaosRun) begin(op string) {
	if t := r.trigger.Load(); t != nil && t.op == op && r.trigger.CompareAndSwap(t, nil) {
		close(t.began)
	}
}

// violate records a violation of an invariant.
func (r *chaosRun) violate(where, format string, args ...any) {
	msg := fmt.Sprintf("[%v] %s: %s", time.Since(r.start).Round(time.Millisecond), where, fmt.Sprintf(format, args...))
	r.mu.Lock()
	r.violations = append(r.violations, msg)
	r.mu.Unlock()
	r.t.Log("VIOLATION " + msg)
}

func (r *chaosRun) violationCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.violations)
}

// listPods lists the test's pods, with more labels to match if given.
func (r *chaosRun) listPods(labels map[string]string) ([]*criapi.PodSandbox, error) {
	sel := map[string]string{runLabel: r.id}
	maps.Copy(sel, labels)
	ctx, cancel := opContext()
	defer cancel()
	rsp, err := r.cri.ListPodSandbox(ctx, &criapi.ListPodSandboxRequest{Filter: &criapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		return nil, err
	}
	return rsp.GetItems(), nil
}

// checkAddrShape checks a READY pod's addresses: none for a host-network
// pod, else one from each of the test's subnets.
func (r *chaosRun) checkAddrShape(where string, p *podRec, ips []string) {
	if p.host {
		if len(ips) != 0 {
			r.violate(where, "host-network pod %s (%s) reports addresses %v", p.name, p.id, ips)
		}
		return
	}
	var v4, v6 int
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		switch {
		case err != nil:
			r.violate(where, "READY pod %s (%s) reports the address %q: %v", p.name, p.id, s, err)
		case r.v4.Contains(a):
			v4++
		case r.v6.Contains(a):
			v6++
		default:
			r.violate(where, "READY pod %s (%s) reports %s, outside %s and %s", p.name, p.id, s, r.v4, r.v6)
		}
	}
	if v4 != 1 || v6 != 1 {
		r.violate(where, "READY pod %s (%s) reports %v; want one IPv4 and one IPv6 address", p.name, p.id, ips)
	}
}

// eth0Addrs lists the global addresses of eth0 in the network namespace
// mounted at path, sorted.
func eth0Addrs(path string) ([]string, error) {
	if path == "" {
		return nil, errors.New("no network namespace path")
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", path, err)
	}
	defer h.Close()
	l, err := h.LinkByName("eth0")
	if err != nil {
		return nil, fmt.Errorf("eth0 in %s: %w", path, err)
	}
	addrs, err := h.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("addresses of eth0 in %s: %w", path, err)
	}
	out := []string{}
	for _, a := range addrs {
		if a.Scope == unix.RT_SCOPE_UNIVERSE {
			out = append(out, a.IP.String())
		}
	}
	slices.Sort(out)
	return out, nil
}

// bridgeVeths lists the interfaces attached to the test's bridge, sorted;
// none if the bridge does not exist.
func (r *chaosRun) bridgeVeths() ([]string, error) {
	br, err := netlink.LinkByName(r.d.bridge)
	if errors.As(err, new(netlink.LinkNotFoundError)) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			out = append(out, l.Attrs().Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// netnsFiles lists /run/netns (this test's own tmpfs), sorted.
func netnsFiles() ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out, nil
}

// waitFor polls cond until it returns nil or patience runs out, and
// returns its last error.
func waitFor(patience time.Duration, cond func() error) error {
	return testutil.Poll(patience, 50*time.Millisecond, cond)
}

// waitJoined waits until nri-podnet has joined nrinetd (NetworkReady)
// and 20-chaostag too.
func (r *chaosRun) waitJoined(where string) {
	var last nriStatus
	err := waitFor(joinPatience, func() error {
		s, err := nriState(context.Background(), r.cri)
		if err != nil {
			return err
		}
		last = s
		if !s.NetworkReady {
			return fmt.Errorf("network not ready: %s", s.Reason)
		}
		return nil
	})
	if err != nil {
		r.violate(where, "nri-podnet did not join within %v: %v", joinPatience, err)
		return
	}
	err = waitFor(tagPatience, func() error {
		s, err := nriState(context.Background(), r.cri)
		if err != nil {
			return err
		}
		last = s
		if !s.joined(taggerIdx + "-" + taggerName) {
			return errors.New("not joined")
		}
		return nil
	})
	if err != nil {
		r.violate(where, "20-chaostag did not (re)join within %v: %v (plugins %+v)", tagPatience, err, last.Plugins)
	}
}

// waitPodnetGone waits until no nri-podnet process is left but those
// launched by nrinetd's current process, reaping the zombies of those
// reparented to the test.
func (r *chaosRun) waitPodnetGone(where string) {
	var left []proc
	err := waitFor(gonePatience, func() error {
		r.reaped.Add(int64(reapOrphans(podnetComm)))
		left = left[:0]
		for _, p := range processesOf(podnetBin) {
			if r.d.pid() == 0 || p.ppid != r.d.pid() {
				left = append(left, p)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%d left", len(left))
		}
		return nil
	})
	if err != nil {
		r.violate(where, "nri-podnet processes of no running nrinetd are left after %v: %v", gonePatience, left)
	}
}

// ipamState reads nri-podnet's IPAM database, which must not be open:
// ipam Check's problems, and each owner's addresses, sorted.
func (r *chaosRun) ipamState() (map[string][]string, error) {
	cfg, err := ipam.ParseConfig([]string{r.v4.String(), r.v6.String()}, nil, nil)
	if err != nil {
		return nil, err
	}
	a, err := ipam.Open(filepath.Join(r.d.podnetState, "ipam.db"), cfg, ipam.WithTimeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	defer a.Close()
	checkErr := a.Check()
	all, err := a.Allocations()
	if err != nil {
		return nil, errors.Join(checkErr, err)
	}
	owners := map[string][]string{}
	for _, al := range all {
		owners[al.Owner] = append(owners[al.Owner], al.Prefix.Addr().String())
	}
	for _, ips := range owners {
		slices.Sort(ips)
	}
	if checkErr != nil {
		return owners, fmt.Errorf("ipam Check: %w", checkErr)
	}
	return owners, nil
}

// readyPod is a READY pod as a checkpoint sees it.
type readyPod struct {
	rec      podRec
	worker   *worker
	hostVeth string
}

// checkpoint checks every invariant; the workers must be quiesced. It
// starts nrinetd if it does not run, stops it gracefully to read the
// IPAM database and starts it again, and reconciles the workers' pods.
// It returns an error only if nrinetd cannot be started, which ends the
// test.
func (r *chaosRun) checkpoint(n int, why string) error {
	where := fmt.Sprintf("checkpoint %d (%s)", n, why)
	if !r.d.running() {
		if err := r.d.start(startPatience); err != nil {
			r.violate(where, "starting nrinetd: %v", err)
			return err
		}
	}
	r.waitJoined(where)
	before, err := r.listPods(nil)
	if err != nil {
		r.violate(where, "ListPodSandbox before the stop: %v", err)
	}

	// The IPAM database, with nrinetd and nri-podnet stopped.
	if err := r.d.stop(stopPatience); err != nil {
		r.violate(where, "%v", err)
	}
	r.waitPodnetGone(where)
	owners, err := r.ipamState()
	if err != nil {
		r.violate(where, "nri-podnet's IPAM database: %v", err)
	}
	if err := r.d.start(startPatience); err != nil {
		r.violate(where, "starting nrinetd: %v", err)
		return err
	}
	r.waitJoined(where)

	// The pods, and what the workers know of them.
	items, err := r.listPods(nil)
	if err != nil {
		r.violate(where, "ListPodSandbox: %v", err)
		return nil
	}
	if before != nil {
		if b, a := podStates(before), podStates(items); !maps.Equal(b, a) {
			r.violate(where, "a graceful restart changed the pods: before %v, after %v", b, a)
		}
	}
	byWorker := map[int][]*criapi.PodSandbox{}
	for _, it := range items {
		n, err := strconv.Atoi(it.GetLabels()[workerLabel])
		if err != nil || n < 0 || n >= len(r.workers) {
			r.violate(where, "pod %s (%s) has the worker label %q", it.GetMetadata().GetName(), it.GetId(), it.GetLabels()[workerLabel])
			continue
		}
		byWorker[n] = append(byWorker[n], it)
	}
	for _, w := range r.workers {
		w.reconcile(byWorker[w.n], true)
	}

	// Every READY pod: addresses as on eth0, each held once.
	var ready []readyPod
	holder := map[string]string{}
	for _, w := range r.workers {
		for _, p := range sortedPods(w) {
			if !p.ready {
				continue
			}
			rp, ok := r.checkReady(where, w, p)
			if !ok {
				continue
			}
			ready = append(ready, rp)
			for _, ip := range rp.rec.ips {
				if other, dup := holder[ip]; dup {
					r.violate(where, "address %s is held by READY pods %s and %s", ip, other, p.id)
				}
				holder[ip] = p.id
			}
		}
	}

	// IPAM: exactly the READY pods that have a network, with their
	// addresses (as of the stop, which must be the pods now).
	if owners != nil {
		want := map[string][]string{}
		for _, rp := range ready {
			if !rp.rec.host {
				want[rp.rec.id] = rp.rec.ips
			}
		}
		for id, ips := range owners {
			if w, ok := want[id]; !ok {
				r.violate(where, "IPAM owner %s (%v) is not a READY pod", id, ips)
			} else if !slices.Equal(w, ips) {
				r.violate(where, "IPAM gives READY pod %s %v, its status reports %v", id, ips, w)
			}
		}
		for id := range want {
			if _, ok := owners[id]; !ok {
				r.violate(where, "READY pod %s holds no address in IPAM", id)
			}
		}
	}

	// Namespace files, veths, plugin processes.
	r.checkLeftovers(where, ready)
	return nil
}

// checkReady checks a READY pod's verbose status against its namespace.
func (r *chaosRun) checkReady(where string, w *worker, p *podRec) (readyPod, bool) {
	ctx, cancel := opContext()
	defer cancel()
	rsp, err := r.cri.PodSandboxStatus(ctx, &criapi.PodSandboxStatusRequest{PodSandboxId: p.id, Verbose: true})
	if err != nil {
		r.violate(where, "PodSandboxStatus of READY pod %s (%s): %v", p.name, p.id, err)
		return readyPod{}, false
	}
	var info sandboxInfo
	if err := json.Unmarshal([]byte(rsp.GetInfo()["info"]), &info); err != nil {
		r.violate(where, "verbose PodSandboxStatus of %s: info %q: %v", p.id, rsp.GetInfo()["info"], err)
		return readyPod{}, false
	}
	st := rsp.GetStatus()
	if st.GetState() != criapi.PodSandboxState_SANDBOX_READY {
		r.violate(where, "pod %s (%s) is listed READY, but its status is %v", p.name, p.id, st.GetState())
		return readyPod{}, false
	}
	ips := statusIPs(st)
	r.checkAddrShape(where, p, ips)
	if p.ips != nil && !slices.Equal(p.ips, ips) {
		r.violate(where, "the addresses of READY pod %s (%s) changed from %v to %v", p.name, p.id, p.ips, ips)
	}
	p.ips = ips
	if info.NetNS != "" {
		p.netns = info.NetNS
	}
	rp := readyPod{rec: *p, worker: w, hostVeth: info.Info[hostVethKey]}
	if p.host {
		if info.NetNS != "" {
			r.violate(where, "host-network pod %s (%s) has the network namespace %s", p.name, p.id, info.NetNS)
		}
		return rp, true
	}
	if got, err := eth0Addrs(p.netns); err != nil {
		r.violate(where, "READY pod %s (%s): %v", p.name, p.id, err)
	} else if !slices.Equal(got, ips) {
		r.violate(where, "READY pod %s (%s) reports %v, but eth0 in %s has %v", p.name, p.id, ips, p.netns, got)
	}
	if rp.hostVeth == "" {
		r.violate(where, "READY pod %s (%s) has no %s in its network info %v", p.name, p.id, hostVethKey, info.Info)
	}
	// 20-chaostag has joined, and a verbose status asks every plugin: its
	// part is there even if it was away when the pod was created, unless
	// it missed the status deadline.
	tagger := taggerIdx + "-" + taggerName
	if _, stale := info.Stale[tagger]; info.Info[TagKey] != p.name && !stale {
		r.violate(where, "READY pod %s (%s) has %s=%q in its network info, want its name (stale parts %v)",
			p.name, p.id, TagKey, info.Info[TagKey], info.Stale)
	}
	return rp, true
}

// checkLeftovers checks that the namespace files and the veths on the
// bridge are exactly those of the READY pods, and that no plugin process
// of an earlier nrinetd is left.
func (r *chaosRun) checkLeftovers(where string, ready []readyPod) {
	var wantNS, wantVeths []string
	for _, rp := range ready {
		if rp.rec.host {
			continue
		}
		wantNS = append(wantNS, filepath.Base(rp.rec.netns))
		if rp.hostVeth != "" {
			wantVeths = append(wantVeths, rp.hostVeth)
		}
	}
	slices.Sort(wantNS)
	slices.Sort(wantVeths)
	// Namespace files go synchronously (StopPodSandbox, or the sweep at
	// start), veths asynchronously (nri-podnet deletes them in the
	// background, the kernel with their namespace): wait for both.
	var files, veths []string
	err := waitFor(gonePatience, func() error {
		var err error
		if files, err = netnsFiles(); err != nil {
			return err
		}
		if !slices.Equal(files, wantNS) {
			return errors.New("namespace files differ")
		}
		return nil
	})
	if err != nil {
		r.violate(where, "namespace files: %v; have %v, the READY pods %v: extra %v, missing %v",
			err, files, wantNS, minus(files, wantNS), minus(wantNS, files))
	}
	err = waitFor(gonePatience, func() error {
		var err error
		if veths, err = r.bridgeVeths(); err != nil {
			return err
		}
		if !slices.Equal(veths, wantVeths) {
			return errors.New("veths differ")
		}
		return nil
	})
	if err != nil {
		r.violate(where, "veths on %s: %v; have %v, the READY pods %v: extra %v, missing %v",
			r.d.bridge, err, veths, wantVeths, minus(veths, wantVeths), minus(wantVeths, veths))
	}
	r.waitPodnetGone(where)
}

// podStates maps the pods of a list to their states.
func podStates(items []*criapi.PodSandbox) map[string]criapi.PodSandboxState {
	out := map[string]criapi.PodSandboxState{}
	for _, it := range items {
		out[it.GetId()] = it.GetState()
	}
	return out
}

// sortedPods returns a worker's pods in ID order.
func sortedPods(w *worker) []*podRec {
	out := slices.Collect(maps.Values(w.pods))
	slices.SortFunc(out, func(a, b *podRec) int { return strings.Compare(a.id, b.id) })
	return out
}

// minus returns the elements of a that are not in b.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
