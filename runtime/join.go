package runtime

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/nrinet/nrinet/api"
)

// A plugin joins without holding up requests: it is registered as joining
// and the requests that start from then on carry on without it, leaving it
// their events in a queue; the requests that started earlier, which do
// not know about it, are waited for; then it receives the runtime's state
// in Synchronize, then the queued events (less those its Synchronize
// already covered), and only when the queue is empty does it take part in
// requests. So a plugin sees every pod and container once, in Synchronize
// or as an event, and no request waits for another plugin's calls because
// a plugin joins.

// epoch groups the lifecycle requests that started between two plugins
// beginning to join. Epochs end in order: done is closed once a later
// epoch has begun and every request of this epoch and of the earlier ones
// has ended.
type epoch struct {
	active int           // requests of this epoch still running
	next   *epoch        // the epoch that began after this one
	done   chan struct{} // see above
}

func newEpoch() *epoch { return &epoch{done: make(chan struct{})} }

// maxQueuedEvents bounds the events queued for one joining plugin; a
// plugin whose Synchronize takes so long that more pile up fails to join
// (and a launched one is restarted).
const maxQueuedEvents = 1 << 16

// maxCatchUpRounds is how many rounds of queued events a joining plugin
// gets, and drainQueueLength how many events may wait for it, before
// requests wait for it: see joiner.draining.
const (
	maxCatchUpRounds = 3
	drainQueueLength = 1024
)

// joiner is a plugin that is synchronizing.
type joiner struct {
	p        *plugin
	queue    []queued
	overflow bool
	// draining is set when events arrive faster than the plugin works
	// through them (the queue did not shrink over a round, it is the
	// maxCatchUpRounds-th round, or drainQueueLength events wait):
	// requests for the events it is subscribed to then wait, in begin,
	// until it has worked through its queue and joined, or failed to;
	// ready is closed then.
	draining bool
	ready    chan struct{}
	// catchingUp is set once the plugin has synchronized and works
	// through its queue; until then the queue only grows (a plugin
	// waiting for slow requests must not make others wait).
	catchingUp bool
}

// queued is a lifecycle event that happened while a plugin was joining:
// the request the runtime made (see late), with its pod and container.
type queued struct {
	ev  api.Event
	pod *api.PodSandbox
	ctr *api.Container
	msg api.VTMessage
}

// request is a lifecycle request in flight.
type request struct {
	// plugins are the joined plugins subscribed to the event, in order.
	plugins []*plugin
	// joiners are the joining plugins the event was queued for.
	joiners []*plugin
	r       *Runtime
	epoch   *epoch
}

// end ends the request.
func (q *request) end() {
	q.r.mu.Lock()
	q.epoch.active--
	q.r.endEpochsLocked()
	q.r.mu.Unlock()
}

// begin registers a lifecycle request for ev, made with msg: it returns
// the joined plugins subscribed to ev, in order, and the joining plugins
// it queued the event for (nil msg: not an event to catch up on). It
// waits, as long as ctx allows, while a joining plugin subscribed to ev is
// draining.
func (r *Runtime) begin(ctx context.Context, ev api.Event, pod *api.PodSandbox, ctr *api.Container, msg api.VTMessage) (*request, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if r.stopped {
			return nil, ErrClosed
		}
		j := r.drainingLocked(ev)
		if j == nil {
			break
		}
		r.mu.Unlock()
		select {
		case <-j.ready:
		case <-ctx.Done():
			r.mu.Lock()
			return nil, fmt.Errorf("runtime: %s of %s: gave up waiting for plugin %q to catch up on the events that happened while it joined: %w",
				ev.Method(), describeObject(pod, ctr), j.p.fullName(), ctx.Err())
		}
		r.mu.Lock()
	}
	req := &request{r: r, epoch: r.epoch}
	req.epoch.active++
	for _, p := range r.plugins {
		if p.events.IsSet(ev) && !p.isClosed() {
			req.plugins = append(req.plugins, p)
		}
	}
	if msg != nil && len(r.joining) > 0 {
		req.joiners = r.queueLocked(ev, pod, ctr, msg)
	}
	return req, nil
}

// drainingLocked returns a draining joiner subscribed to ev, or nil.
func (r *Runtime) drainingLocked(ev api.Event) *joiner {
	for _, j := range r.joining {
		if j.draining && j.p.events.IsSet(ev) {
			return j
		}
	}
	return nil
}

// queueLocked leaves an event for the joining plugins subscribed to it
// and returns them.
func (r *Runtime) queueLocked(ev api.Event, pod *api.PodSandbox, ctr *api.Container, msg api.VTMessage) []*plugin {
	var out []*plugin
	for _, j := range r.joining {
		if !j.p.events.IsSet(ev) {
			continue
		}
		if len(j.queue) >= maxQueuedEvents {
			j.overflow = true
			continue
		}
		j.queue = append(j.queue, queued{ev: ev, pod: pod, ctr: ctr, msg: msg})
		if j.catchingUp && len(j.queue) >= drainQueueLength {
			j.draining = true
		}
		out = append(out, j.p)
	}
	return out
}

// endEpochsLocked closes the epochs that have ended, oldest first.
func (r *Runtime) endEpochsLocked() {
	for r.oldest != r.epoch && r.oldest.active == 0 {
		close(r.oldest.done)
		r.oldest = r.oldest.next
	}
}

// join takes a configured plugin through Synchronize and the events that
// happened meanwhile into the dispatch list. It returns the container
// updates of the plugin's Synchronize answer.
func (p *plugin) join(ctx context.Context) ([]*api.ContainerUpdate, error) {
	r := p.r
	j := &joiner{p: p, ready: make(chan struct{})}
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	r.joining[p] = j
	earlier := r.epoch
	r.epoch = newEpoch()
	earlier.next = r.epoch
	r.endEpochsLocked()
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.joining, p)
		close(j.ready)
		r.mu.Unlock()
	}()

	// Requests that started before, which do not know about this plugin,
	// must be over before the state is read, or their pods could be in
	// neither the state nor the queue.
	select {
	case <-earlier.done:
	case <-p.done:
		return nil, fmt.Errorf("closed while waiting for running requests: %w", p.reason())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.cfg.syncCallback == nil {
		pods, ctrs, err := r.state(ctx)
		if err != nil {
			return nil, err
		}
		return p.synchronizeAndCatchUp(ctx, j, pods, ctrs)
	}
	// The runtime lists its state and hands it to us, holding what it
	// must hold meanwhile; the updates are the runtime's to apply.
	var joined bool
	err := r.cfg.syncCallback(ctx, func(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
		if joined {
			return nil, fmt.Errorf("plugin %q: Synchronize callback called twice", p.fullName())
		}
		joined = true
		return p.synchronizeAndCatchUp(ctx, j, r.withAddresses(ctx, pods), ctrs)
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("runtime's synchronization with plugin %q: %w", p.fullName(), err)
	case !joined:
		return nil, fmt.Errorf("the runtime's synchronization did not synchronize plugin %q", p.fullName())
	}
	return nil, nil
}

// synchronizeAndCatchUp sends the plugin the runtime's state, pods and
// ctrs, then the events queued for it, and adds it to the dispatch list.
// It returns the container updates of its Synchronize answer.
func (p *plugin) synchronizeAndCatchUp(ctx context.Context, j *joiner, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	r := p.r
	// A pod or container whose creation is queued for the plugin (the
	// runtime may list it while its creation is in flight) reaches it as
	// that event, which carries the plugin's part of a pod network, not
	// in Synchronize.
	r.mu.Lock()
	queued := map[string]bool{}
	for _, q := range j.queue {
		if q.ev == api.Event_RUN_POD_SANDBOX || q.ev == api.Event_CREATE_CONTAINER {
			queued[objectID(q.pod, q.ctr)] = true
		}
	}
	r.mu.Unlock()
	if len(queued) > 0 {
		pods = slices.DeleteFunc(slices.Clone(pods), func(p *api.PodSandbox) bool { return queued[p.GetId()] })
		ctrs = slices.DeleteFunc(slices.Clone(ctrs), func(c *api.Container) bool { return queued[c.GetId()] })
	}
	updates, err := p.synchronize(ctx, pods, ctrs)
	if err != nil {
		return nil, err
	}
	known := make(map[string]bool, len(pods)+len(ctrs))
	for _, pod := range pods {
		known[pod.GetId()] = true
	}
	for _, ctr := range ctrs {
		known[ctr.GetId()] = true
	}
	for round, prev := 0, -1; ; round++ {
		r.mu.Lock()
		j.catchingUp = true
		q, overflow := j.queue, j.overflow
		j.queue = nil
		if len(q) == 0 && !overflow {
			err := r.addLocked(p)
			draining := j.draining
			r.mu.Unlock()
			if err == nil && round > 0 {
				p.logger().Debug("caught up with the events that happened while it joined", "rounds", round, "requestsWaited", draining)
			}
			return updates, err
		}
		if !j.draining && (round+1 >= maxCatchUpRounds || (prev >= 0 && len(q) >= prev)) {
			j.draining = true
		}
		prev = len(q)
		r.mu.Unlock()
		if overflow {
			return nil, fmt.Errorf("more than %d events happened while it synchronized", maxQueuedEvents)
		}
		if err := p.catchUpAll(ctx, q, known); err != nil {
			return nil, err
		}
	}
}

// catchUpConcurrency bounds the pods whose queued events a joining plugin
// receives at the same time.
const catchUpConcurrency = 16

// catchUpAll delivers queued events, those of one pod (and its
// containers) in order, those of different pods concurrently, as the
// runtime's own requests reach plugins: so a plugin catches up faster than
// events arrive from requests that run concurrently.
func (p *plugin) catchUpAll(ctx context.Context, q []queued, known map[string]bool) error {
	var (
		order  []string
		byPod  = map[string][]queued{}
		mu     sync.Mutex // guards known and first
		first  error
		sem    = make(chan struct{}, catchUpConcurrency)
		wg     sync.WaitGroup
		failed = make(chan struct{})
	)
	for _, ev := range q {
		id := ev.pod.GetId()
		if _, ok := byPod[id]; !ok {
			order = append(order, id)
		}
		byPod[id] = append(byPod[id], ev)
	}
dispatch:
	for _, id := range order {
		select {
		case sem <- struct{}{}:
		case <-failed:
			break dispatch
		}
		wg.Go(func() {
			defer func() { <-sem }()
			for _, ev := range byPod[id] {
				if err := p.catchUp(ctx, ev, known, &mu); err != nil {
					mu.Lock()
					if first == nil {
						first = err
						close(failed)
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// catchUp delivers one event that happened while the plugin joined,
// unless its Synchronize covered it: a pod or container it received there
// is not created again, and events of a pod or container it never knew
// are not delivered. A plugin's error is logged (the request is over); a
// broken connection ends the join.
func (p *plugin) catchUp(ctx context.Context, q queued, known map[string]bool, mu *sync.Mutex) error {
	id := objectID(q.pod, q.ctr)
	mu.Lock()
	deliver := known[id]
	switch q.ev {
	case api.Event_RUN_POD_SANDBOX, api.Event_CREATE_CONTAINER:
		deliver = !deliver
		known[id] = true
	}
	mu.Unlock()
	if !deliver {
		return nil
	}
	v, _, err := p.call(ctx, q.ev, q.pod, q.ctr, lifecycle, func(ctx context.Context, p *plugin) error {
		return p.r.late(ctx, p, q)
	})
	if v == useAnswer {
		return nil
	}
	if p.isClosed() {
		return fmt.Errorf("catching up on %s of %s: %w", q.ev.Method(), id, err)
	}
	p.logger().Warn("plugin failed an event that happened while it joined", "event", q.ev.Method(), "id", id, "error", err)
	return nil
}

// state lists the pods and containers for a joining plugin.
func (r *Runtime) state(ctx context.Context) ([]*api.PodSandbox, []*api.Container, error) {
	if r.cfg.sync == nil {
		return nil, nil, nil
	}
	pods, ctrs, err := r.cfg.sync(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods and containers for Synchronize: %w", err)
	}
	return r.withAddresses(ctx, pods), ctrs, nil
}

// addLocked adds a plugin that completed its handshake to the dispatch
// list, in invocation order: by index, then by name.
func (r *Runtime) addLocked(p *plugin) error {
	delete(r.admitted, p)
	if r.stopped {
		return ErrClosed
	}
	if p.isClosed() {
		// It died between Synchronize and now; close has already
		// dropped it, so it must not be added back.
		return fmt.Errorf("connection closed while joining: %w", p.reason())
	}
	for _, q := range r.plugins {
		if q.fullName() == p.fullName() && !q.isClosed() && !p.mayShareName(q) {
			// Network authority goes by name: a second connection may not
			// take over the name of a connected plugin with a part in pod
			// networks, nor one with a part share a connected name.
			return fmt.Errorf("plugin %q is already connected (%s, pid %d)", p.fullName(), q.kind, q.pid)
		}
	}
	r.insertLocked(p)
	return nil
}

// objectID is the ID of the container an event is about, else of its pod.
func objectID(pod *api.PodSandbox, ctr *api.Container) string {
	if ctr != nil {
		return ctr.GetId()
	}
	return pod.GetId()
}

// podName is a pod's namespace/name, the value of the "pod" key of log
// lines; its ID goes under "sandbox".
func podName(pod *api.PodSandbox) string {
	return pod.GetNamespace() + "/" + pod.GetName()
}

// describeObject names the container an event is about, else its pod.
func describeObject(pod *api.PodSandbox, ctr *api.Container) string {
	if ctr != nil {
		return fmt.Sprintf("container %s (%s)", ctr.GetName(), ctr.GetId())
	}
	return fmt.Sprintf("pod %s/%s (%s)", pod.GetNamespace(), pod.GetName(), pod.GetId())
}

// late makes the request of an event that happened while p joined, and
// takes care of what it answers now that the request is over: the network
// of a pod (lateRunPodSandbox), container updates and evictions
// (lateUpdates); an adjustment of a container that exists already is
// logged and dropped.
func (r *Runtime) late(ctx context.Context, p *plugin, q queued) error {
	method := q.ev.Method()
	switch m := q.msg.(type) {
	case *api.RunPodSandboxRequest:
		return r.lateRunPodSandbox(ctx, p, m)
	case *api.CreateContainerRequest:
		rsp, err := rpc[api.CreateContainerResponse](ctx, p, method, m)
		if err != nil {
			return err
		}
		if rsp.GetAdjust().SizeVT() > 0 {
			p.logger().Warn("plugin joined while the container was created; its adjustment of it is not applied",
				"container", m.GetContainer().GetId())
		}
		r.lateUpdates(p, rsp.GetUpdate(), rsp.GetEvict())
		return nil
	case *api.UpdateContainerRequest:
		rsp, err := rpc[api.UpdateContainerResponse](ctx, p, method, m)
		if err != nil {
			return err
		}
		r.lateUpdates(p, rsp.GetUpdate(), rsp.GetEvict())
		return nil
	case *api.StopContainerRequest:
		rsp, err := rpc[api.StopContainerResponse](ctx, p, method, m)
		if err != nil {
			return err
		}
		r.lateUpdates(p, rsp.GetUpdate(), nil)
		return nil
	}
	_, err := rpc[api.Empty](ctx, p, method, q.msg) // a relay: empty answer
	return err
}

// PluginSyncBlock holds off plugins from taking the runtime's state until
// it is unblocked; see BlockPluginSync.
type PluginSyncBlock struct {
	r     *Runtime
	epoch *epoch
	once  sync.Once
}

// BlockPluginSync keeps plugins that begin to join from now on from
// reading the runtime's state (SyncFunc or WithSyncCallback) until the
// block is lifted with Unblock, as containerd's NRI integration asks
// around its changes to pods and containers: a plugin then sees such a
// change in its Synchronize or as an event, never neither. It does not
// wait, and blocks no request: it counts like a lifecycle request that
// began now (a plugin that began to join earlier is not held off by it).
func (r *Runtime) BlockPluginSync() *PluginSyncBlock {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := &PluginSyncBlock{r: r, epoch: r.epoch}
	b.epoch.active++
	return b
}

// Unblock lifts the block. Calls after the first do nothing; a nil block
// is fine.
func (b *PluginSyncBlock) Unblock() {
	if b == nil || b.r == nil {
		return
	}
	b.once.Do(func() {
		b.r.mu.Lock()
		b.epoch.active--
		b.r.endEpochsLocked()
		b.r.mu.Unlock()
	})
}

// AwaitJoins waits until the plugins that are joining now have joined or
// failed to, or ctx ends. A runtime that wants upstream's BlockPluginSync,
// which waits for a join in progress, calls it first; the Runtime itself
// never needs to.
func (r *Runtime) AwaitJoins(ctx context.Context) error {
	r.mu.Lock()
	var ready []chan struct{}
	for _, j := range r.joining {
		ready = append(ready, j.ready)
	}
	r.mu.Unlock()
	for _, c := range ready {
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
