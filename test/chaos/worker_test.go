package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels of the test's pods.
const (
	runLabel    = "chaos.nrinet.io/run"
	workerLabel = "chaos.nrinet.io/worker"
	podNS       = "chaos"
)

// Worker pacing and bounds.
const (
	maxPodsPerWorker = 6
	opTimeout        = 20 * time.Second
)

// Operation kinds, for the statistics.
const (
	opRun     = "runp"
	opStatus  = "inspectp"
	opStop    = "stopp"
	opRemove  = "rmp"
	opCrictl  = "inspectp/crictl"
	opList    = "pods"
	opKindsNo = 6
)

var opKinds = [opKindsNo]string{opRun, opStatus, opCrictl, opStop, opRemove, opList}

// podRec is what a worker knows about one of its pods, from successful
// answers only.
type podRec struct {
	id, name string
	host     bool
	ready    bool
	// sure says ready was learnt from an answer given after the last
	// request about the pod that failed in transit.
	sure  bool
	ips   []string // sorted, from the last READY status
	netns string   // from a verbose status
}

// opStats counts the outcomes of one kind of operation.
type opStats struct {
	ok   int
	errs map[codes.Code]int
}

// worker drives its own pods. Its fields are used by its goroutine, and
// by the chaos loop only while the workers are quiesced.
type worker struct {
	n    int
	r    *chaosRun
	rng  *rand.Rand
	pods map[string]*podRec // by ID
	// pending holds the names of RunPodSandbox calls that failed in
	// transit (the pod may exist), with whether they were host-network.
	pending map[string]bool
	// refused holds the names of RunPodSandbox calls nrinetd answered
	// with an error: such a pod must never appear.
	refused map[string]string
	seq     int
	stats   map[string]*opStats
}

func newWorker(r *chaosRun, n int, seed uint64) *worker {
	w := &worker{
		n: n, r: r, rng: rand.New(rand.NewPCG(seed, uint64(n))),
		pods: map[string]*podRec{}, pending: map[string]bool{}, refused: map[string]string{},
		stats: map[string]*opStats{},
	}
	for _, k := range opKinds {
		w.stats[k] = &opStats{errs: map[codes.Code]int{}}
	}
	return w
}

func (w *worker) where() string { return fmt.Sprintf("worker %d", w.n) }

// loop runs operations until ctx ends, each while holding the gate for
// reading, so that the chaos loop can quiesce the workers.
func (w *worker) loop(ctx context.Context) {
	for ctx.Err() == nil {
		w.r.gate.RLock()
		err := w.step()
		w.r.gate.RUnlock()
		pause := time.Duration(w.rng.IntN(5)) * time.Millisecond
		if err != nil {
			// Down or failing: try again a little later.
			pause = 50*time.Millisecond + time.Duration(w.rng.IntN(200))*time.Millisecond
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// step runs one random operation and returns its error, if any.
func (w *worker) step() error {
	if len(w.pending) > 0 && w.rng.IntN(20) == 0 {
		return w.list()
	}
	all := make([]*podRec, 0, len(w.pods))
	for _, p := range w.pods {
		all = append(all, p)
	}
	slices.SortFunc(all, func(a, b *podRec) int { return strings.Compare(a.id, b.id) })
	pick := func(prefer func(*podRec) bool) *podRec {
		var some []*podRec
		for _, p := range all {
			if prefer(p) {
				some = append(some, p)
			}
		}
		if len(some) == 0 || w.rng.IntN(5) == 0 {
			some = all
		}
		return some[w.rng.IntN(len(some))]
	}
	r := w.rng.IntN(100)
	switch {
	case len(all) == 0 || (r < 30 && len(all)+len(w.pending) < maxPodsPerWorker):
		return w.run()
	case r < 65:
		return w.inspect(all[w.rng.IntN(len(all))], w.rng.IntN(2) == 0)
	case r < 85:
		return w.stop(pick(func(p *podRec) bool { return p.ready }))
	default:
		return w.remove(pick(func(p *podRec) bool { return !p.ready }))
	}
}

// record counts an outcome.
func (w *worker) record(kind string, err error) {
	s := w.stats[kind]
	if err == nil {
		s.ok++
		w.r.okOps.Add(1)
		return
	}
	s.errs[status.Code(err)]++
	w.r.failedOps.Add(1)
}

// inTransit reports whether a request failed without an answer from
// nrinetd (or with one that does not say whether it took effect).
func inTransit(err error) bool {
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unavailable:
		return !strings.Contains(st.Message(), "network not ready")
	case codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	return false
}

func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// podConfig is the configuration of a new pod.
func (w *worker) podConfig(name string, host bool) *criapi.PodSandboxConfig {
	cfg := &criapi.PodSandboxConfig{
		Metadata: &criapi.PodSandboxMetadata{Name: name, Namespace: podNS, Uid: w.r.id + "-" + name},
		Hostname: name,
		Labels:   map[string]string{runLabel: w.r.id, workerLabel: strconv.Itoa(w.n)},
		Linux:    &criapi.LinuxPodSandboxConfig{CgroupParent: "/nrinet-chaos"},
	}
	if host {
		cfg.Hostname = ""
		cfg.Linux.SecurityContext = &criapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &criapi.NamespaceOption{Network: criapi.NamespaceMode_NODE},
		}
	}
	return cfg
}

// run creates a pod and asks for its status, as the kubelet does.
func (w *worker) run() error {
	name := fmt.Sprintf("w%d-%d", w.n, w.seq)
	w.seq++
	host := w.rng.IntN(10) == 0
	ctx, cancel := opContext()
	defer cancel()
	w.r.begin(opRun)
	rsp, err := w.r.cri.RunPodSandbox(ctx, &criapi.RunPodSandboxRequest{Config: w.podConfig(name, host)})
	w.record(opRun, err)
	if err != nil {
		if inTransit(err) {
			w.pending[name] = host
			w.r.lostRuns.Add(1)
		} else {
			w.refused[name] = err.Error()
			w.r.refused.Add(1)
		}
		return err
	}
	id := rsp.GetPodSandboxId()
	if len(id) != 64 {
		w.r.violate(w.where(), "RunPodSandbox of %s returned the ID %q, want 64 hex digits", name, id)
		return nil
	}
	if _, dup := w.pods[id]; dup {
		w.r.violate(w.where(), "RunPodSandbox of %s returned the ID %s of an existing pod", name, id)
	}
	p := &podRec{id: id, name: name, host: host, ready: true, sure: true}
	w.pods[id] = p
	return w.inspect(p, true)
}

// sandboxInfo is what the test reads of a verbose PodSandboxStatus's
// "info".
type sandboxInfo struct {
	NetNS      string            `json:"netns"`
	NRIStopped bool              `json:"nriStopped"`
	Info       map[string]string `json:"info"`
	Stale      map[string]string `json:"stale"`
}

// statusIPs returns the addresses of a status, sorted.
func statusIPs(st *criapi.PodSandboxStatus) []string {
	var out []string
	if ip := st.GetNetwork().GetIp(); ip != "" {
		out = append(out, ip)
	}
	for _, a := range st.GetNetwork().GetAdditionalIps() {
		out = append(out, a.GetIp())
	}
	slices.Sort(out)
	return out
}

// inspect asks for a pod's status and checks the answer against what the
// worker knows and, verbose, against the pod's namespace. One verbose
// status in 16 goes through crictl inspectp, if there is crictl.
func (w *worker) inspect(p *podRec, verbose bool) error {
	ctx, cancel := opContext()
	defer cancel()
	kind := opStatus
	var rsp *criapi.PodSandboxStatusResponse
	var err error
	w.r.begin(opStatus)
	if verbose && crictlBin != "" && w.rng.IntN(16) == 0 {
		kind = opCrictl
		rsp, err = crictlStatus(ctx, w.r.dir, w.r.d.criSock, p.id)
	} else {
		rsp, err = w.r.cri.PodSandboxStatus(ctx, &criapi.PodSandboxStatusRequest{PodSandboxId: p.id, Verbose: verbose})
	}
	if status.Code(err) == codes.NotFound {
		w.record(kind, nil)
		if p.sure {
			w.r.violate(w.where(), "pod %s (%s) vanished: PodSandboxStatus says %v", p.name, p.id, err)
		}
		delete(w.pods, p.id)
		return nil
	}
	w.record(kind, err)
	if err != nil {
		return err
	}
	st := rsp.GetStatus()
	if st.GetId() != p.id || st.GetMetadata().GetName() != p.name {
		w.r.violate(w.where(), "PodSandboxStatus of %s (%s) answered for %s (%s)", p.name, p.id, st.GetMetadata().GetName(), st.GetId())
		return nil
	}
	var info sandboxInfo
	if verbose {
		if err := json.Unmarshal([]byte(rsp.GetInfo()["info"]), &info); err != nil {
			w.r.violate(w.where(), "verbose PodSandboxStatus of %s: info %q: %v", p.id, rsp.GetInfo()["info"], err)
			return nil
		}
		if info.NetNS != "" {
			p.netns = info.NetNS
		}
	}
	w.settle(p, st.GetState() == criapi.PodSandboxState_SANDBOX_READY, "PodSandboxStatus")
	if !p.ready {
		p.ips = nil
		return nil
	}
	ips := statusIPs(st)
	w.r.checkAddrShape(w.where(), p, ips)
	if p.ips != nil && !slices.Equal(p.ips, ips) {
		w.r.violate(w.where(), "the addresses of READY pod %s (%s) changed from %v to %v", p.name, p.id, p.ips, ips)
	}
	p.ips = ips
	if verbose && !p.host {
		if got, err := eth0Addrs(p.netns); err != nil {
			w.r.violate(w.where(), "READY pod %s (%s): %v", p.name, p.id, err)
		} else if !slices.Equal(got, ips) {
			w.r.violate(w.where(), "READY pod %s (%s) reports %v, but eth0 in %s has %v", p.name, p.id, ips, p.netns, got)
		}
	}
	return nil
}

// settle takes a pod's state from an answer, checking it against what
// the worker was sure of.
func (w *worker) settle(p *podRec, ready bool, from string) {
	if p.sure && p.ready != ready {
		if p.ready {
			w.r.violate(w.where(), "READY pod %s (%s) is NOTREADY (%s) although it was never stopped", p.name, p.id, from)
		} else {
			w.r.violate(w.where(), "stopped pod %s (%s) is READY again (%s)", p.name, p.id, from)
		}
	}
	p.ready, p.sure = ready, true
}

// stop stops a pod.
func (w *worker) stop(p *podRec) error {
	ctx, cancel := opContext()
	defer cancel()
	w.r.begin(opStop)
	_, err := w.r.cri.StopPodSandbox(ctx, &criapi.StopPodSandboxRequest{PodSandboxId: p.id})
	w.record(opStop, err)
	if err != nil {
		p.sure = false
		return err
	}
	p.ready, p.sure, p.ips = false, true, nil
	if p.netns != "" && exists(p.netns) {
		w.r.violate(w.where(), "pod %s (%s) stopped, but its namespace file %s is still there", p.name, p.id, p.netns)
	}
	return nil
}

// remove removes a pod.
func (w *worker) remove(p *podRec) error {
	ctx, cancel := opContext()
	defer cancel()
	w.r.begin(opRemove)
	_, err := w.r.cri.RemovePodSandbox(ctx, &criapi.RemovePodSandboxRequest{PodSandboxId: p.id})
	w.record(opRemove, err)
	if err != nil {
		p.sure = false
		return err
	}
	delete(w.pods, p.id)
	if p.netns != "" && exists(p.netns) {
		w.r.violate(w.where(), "pod %s (%s) removed, but its namespace file %s is still there", p.name, p.id, p.netns)
	}
	return nil
}

// list lists the worker's pods to settle the RunPodSandbox calls that
// failed in transit.
func (w *worker) list() error {
	items, err := w.r.listPods(map[string]string{workerLabel: strconv.Itoa(w.n)})
	w.record(opList, err)
	if err != nil {
		return err
	}
	w.reconcile(items, false)
	return nil
}

// reconcile compares the pods nrinetd lists with what the worker knows:
// it adopts the pods of RunPodSandbox calls that failed in transit,
// settles the state of uncertain ones, and drops those that were removed
// although the answer was lost. final says that no request is in flight
// any more (nrinetd restarted since), so that a pending RunPodSandbox
// that is not listed never created its pod.
func (w *worker) reconcile(items []*criapi.PodSandbox, final bool) {
	listed := map[string]bool{}
	for _, it := range items {
		listed[it.GetId()] = true
		ready := it.GetState() == criapi.PodSandboxState_SANDBOX_READY
		if p, ok := w.pods[it.GetId()]; ok {
			w.settle(p, ready, "ListPodSandbox")
			continue
		}
		name := it.GetMetadata().GetName()
		host, pending := w.pending[name]
		switch {
		case pending:
			delete(w.pending, name)
			w.r.adopted.Add(1)
		case w.refused[name] != "":
			w.r.violate(w.where(), "pod %s (%s) exists although RunPodSandbox failed with an answer: %s", name, it.GetId(), w.refused[name])
		default:
			w.r.violate(w.where(), "pod %s (%s) exists, but no RunPodSandbox of that name was made", name, it.GetId())
		}
		w.pods[it.GetId()] = &podRec{id: it.GetId(), name: name, host: host, ready: ready, sure: true}
	}
	for id, p := range w.pods {
		if listed[id] {
			continue
		}
		if p.sure {
			w.r.violate(w.where(), "pod %s (%s) vanished from ListPodSandbox", p.name, p.id)
		}
		delete(w.pods, id)
	}
	if final {
		clear(w.pending)
	}
}

// exists reports whether a path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
