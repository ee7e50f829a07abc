package kubee2e

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The probe: requests to the Service from the client pod's network
// namespace.
const (
	// probeInterval is the time between the starts of two requests.
	probeInterval = 100 * time.Millisecond
	// probeTimeout bounds one request (connect, send, answer).
	probeTimeout = time.Second
	// probeTail is how many requests the probe makes after the last
	// drain window, on the cluster as it began.
	probeTail = 30
)

// A probeResult is one request to the Service.
type probeResult struct {
	start time.Time
	took  time.Duration
	// family is the Service address's; client the pod whose network
	// namespace sent it; backend the pod that answered, "" if it failed
	// with err. noClient: not sent, no client pod was Ready (its
	// replacement, after a drain evicted it, was not yet).
	family, client, backend string
	err                     string
	noClient                bool
}

// A probe requests the Service every probeInterval from the current
// client pod's network namespace, IPv4 and IPv6 in turn, each on a new
// connection (so kube-proxy picks a backend each time), and records
// every request. The client pod is looked up in the API (Running, Ready,
// not being deleted) and its network namespace in CRI on its node: a
// drained node's client is replaced on the other node, and the probe
// follows it. Its goroutine is owned by the probe: stop waits for it.
type probe struct {
	m      *migration
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	results []probeResult
}

// probeClient is the client pod the probe sends from.
type probeClient struct{ name, uid, netns string }

func startProbe(m *migration) *probe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &probe{m: m, cancel: cancel, done: make(chan struct{})}
	go p.run(ctx)
	return p
}

// stop ends the probe and waits for its goroutine; calling it again is a
// no-op.
func (p *probe) stop() {
	p.cancel()
	<-p.done
}

func (p *probe) run(ctx context.Context) {
	defer close(p.done)
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	var client probeClient
	var lookedUp time.Time
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Look the client up again every second, and after a failure.
		if client.netns == "" || time.Since(lookedUp) > time.Second {
			client = p.lookUp(ctx, client)
			lookedUp = time.Now()
		}
		// The request's time is when it is sent (or found unsendable),
		// after the lookup, which asks the API and may take a while.
		svc := p.m.serviceIPs[i%2]
		r := probeResult{start: time.Now(), family: familyOf(svc), client: client.name}
		if client.netns == "" {
			r.noClient = true
		} else if body, err := httpIn(client.netns, netip.AddrPortFrom(svc, servicePort), probeTimeout); err != nil {
			r.err = err.Error()
			client.netns = ""
		} else {
			r.backend = body
		}
		r.took = time.Since(r.start)
		p.mu.Lock()
		p.results = append(p.results, r)
		p.mu.Unlock()
	}
}

// lookUp returns the client pod to send from: old while it is not being
// deleted and its namespace served the last request (whatever its Ready
// condition: the network is what the probe measures), else a Running,
// Ready one, with its network namespace; an empty one if there is none.
func (p *probe) lookUp(ctx context.Context, old probeClient) probeClient {
	m := p.m
	list, err := m.cp.client.CoreV1().Pods(m.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=client"})
	if err != nil {
		return old
	}
	for _, pod := range list.Items {
		if string(pod.UID) == old.uid && old.netns != "" && pod.DeletionTimestamp == nil {
			return old
		}
	}
	for _, pod := range list.Items {
		if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || !podReady(pod) || m.byName[pod.Spec.NodeName] == nil {
			continue
		}
		netns, err := m.byName[pod.Spec.NodeName].podNetns(string(pod.UID))
		if err != nil {
			continue
		}
		return probeClient{name: pod.Name, uid: string(pod.UID), netns: netns}
	}
	return probeClient{}
}

// count returns how many requests the probe made.
func (p *probe) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.results)
}

// snapshot returns the requests made so far.
func (p *probe) snapshot() []probeResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.results)
}

// windowOf returns the index of the drain window a request started in,
// or -1.
func (m *migration) windowOf(r probeResult) int {
	for i, w := range m.windows {
		if !r.start.Before(w.start) && !r.start.After(w.end) {
			return i
		}
	}
	return -1
}

// report checks the probe's requests (none may fail outside a drain
// window) and prints the stage's tables: the requests by window, the
// steps, the pods, the cross-node checks and the leftovers checked.
func (m *migration) report() {
	t := m.t
	results := m.probe.snapshot()
	if len(results) == 0 {
		t.Fatal("the probe made no request")
	}
	begin := results[0].start
	type tally struct {
		requests, failed, unsent int
		backends                 map[string]int
		maxTook                  time.Duration
		failures                 []string
	}
	tallies := make([]tally, len(m.windows)+1) // the last: outside every window
	for i := range tallies {
		tallies[i].backends = map[string]int{}
	}
	clients := map[string]int{}
	for _, r := range results {
		w := m.windowOf(r)
		if w < 0 {
			w = len(m.windows)
		}
		x := &tallies[w]
		at := r.start.Sub(begin).Round(time.Millisecond)
		if r.noClient {
			x.unsent++
			x.failures = append(x.failures, fmt.Sprintf("+%v %s: not sent, no client pod Ready", at, r.family))
			continue
		}
		x.requests++
		x.maxTook = max(x.maxTook, r.took)
		clients[r.client]++
		if r.err != "" {
			x.failed++
			x.failures = append(x.failures, fmt.Sprintf("+%v %s from %s: %s", at, r.family, r.client, r.err))
			continue
		}
		x.backends[r.backend]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "requests to the Service every %v from the client pod's network namespace (IPv4 and IPv6 in turn), over %v; requests by client %v\n",
		probeInterval, results[len(results)-1].start.Sub(begin).Round(time.Second), clients)
	fmt.Fprintf(&b, "%-32s %-10s %8s %9s %7s %9s %9s  %s\n", "drain window", "from", "length", "requests", "failed", "not sent", "slowest", "answered by")
	var total tally
	for i, x := range tallies {
		name, span, length := "outside the windows", "", ""
		if i < len(m.windows) {
			w := m.windows[i]
			name = fmt.Sprintf("%s: %s → %s", w.node, w.from, w.to)
			span = fmt.Sprintf("+%v", w.start.Sub(begin).Round(100*time.Millisecond))
			length = w.end.Sub(w.start).Round(100 * time.Millisecond).String()
		}
		var by []string
		for _, k := range slices.Sorted(maps.Keys(x.backends)) {
			by = append(by, fmt.Sprintf("%s %d", k, x.backends[k]))
		}
		fmt.Fprintf(&b, "%-32s %-10s %8s %9d %7d %9d %9v  %s\n", name, span, length, x.requests, x.failed, x.unsent, x.maxTook.Round(time.Millisecond), strings.Join(by, ", "))
		total.requests, total.failed, total.unsent = total.requests+x.requests, total.failed+x.failed, total.unsent+x.unsent
		total.maxTook = max(total.maxTook, x.maxTook)
	}
	fmt.Fprintf(&b, "%-32s %-10s %8s %9d %7d %9d %9v\n", "all", "", "", total.requests, total.failed, total.unsent, total.maxTook.Round(time.Millisecond))
	t.Logf("requests:\n%s", b.String())
	for i, x := range tallies {
		if i < len(m.windows) {
			if len(x.failures) > 0 {
				t.Logf("failed or not sent inside the window of %s (%s → %s):\n%s", m.windows[i].node, m.windows[i].from, m.windows[i].to, strings.Join(x.failures, "\n"))
			}
			continue
		}
		for _, f := range x.failures {
			t.Errorf("outside every drain window: %s", f)
		}
	}

	b.Reset()
	for _, s := range m.steps {
		fmt.Fprintf(&b, "%-16s %-22s %v\n", s.name, s.node, s.took.Round(time.Millisecond))
	}
	t.Logf("steps:\n%s", b.String())

	b.Reset()
	for _, uid := range slices.SortedFunc(maps.Keys(m.pods), func(a, c string) int { return strings.Compare(m.pods[a].name, m.pods[c].name) }) {
		p := m.pods[uid]
		state := "running"
		if p.gone {
			state = "removed"
		}
		fmt.Fprintf(&b, "%-28s %-16s %-8s %-44v checked %2d times, %s\n", p.name, p.node, p.network, p.ips, p.checks, state)
	}
	t.Logf("pods (addresses from the API, equal to eth0's at every check, %d checks; none changed):\n%s", m.addressChecks, b.String())

	b.Reset()
	for _, r := range m.cross {
		res := "ok"
		if r.err != nil {
			res = r.err.Error()
		}
		fmt.Fprintf(&b, "%-22s %-60s → %-60s %-13s %2d  %s\n", r.when, r.from, r.to, r.path, r.tries, res)
	}
	t.Logf("across the nodes (pod to pod, and through the Service until the other node's backend answers):\n%s", b.String())
	t.Logf("leftovers:\n%s", strings.Join(m.leaks, "\n"))
	t.Logf("the DaemonSet's pods: checked %d times after the steps, only on labelled Nodes, no restart", m.dsChecks)
}
