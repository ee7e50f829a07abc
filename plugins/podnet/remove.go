package podnet

import (
	"context"
	"fmt"

	"github.com/nrinet/nrinet/api"
)

// RemovePodSandbox gives back what the pod still holds when the runtime
// removes it: nothing after its StopPodSandbox, but a pod that was
// stopped while the plugin was away (its StopPodSandbox reached no
// plugin; the runtime went on and removed its network namespace) and
// that the runtime still listed when the plugin joined again, as a
// kubelet leaves a stopped sandbox until its garbage collection, holds
// its addresses and its secondary interfaces' addresses and record until
// then: Synchronize keeps what listed pods hold. The teardown is
// StopPodSandbox's, which needs no network namespace (eth0 and the
// secondary interfaces went with it). A StopPodSandbox that failed is
// retried here too.
func (p *Plugin) RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	_, alloc, _, _, err := p.state()
	if err != nil {
		return err
	}
	id := pod.GetId()
	_, held, err := alloc.Lookup(id)
	if err != nil {
		return fmt.Errorf("podnet: pod %s/%s: %w", pod.GetNamespace(), pod.GetName(), err)
	}
	secondary := 0
	if p.multinet != nil {
		itfs, err := p.multinet.Interfaces(id)
		if err != nil {
			return fmt.Errorf("podnet: pod %s/%s: secondary networks: %w", pod.GetNamespace(), pod.GetName(), err)
		}
		secondary = len(itfs)
	}
	if !held && secondary == 0 {
		return nil
	}
	p.log.Info("releasing what a removed pod still held: its StopPodSandbox did not release it",
		"pod", podName(pod), "sandbox", id, "addresses", held, "secondaryInterfaces", secondary)
	return p.StopPodSandbox(ctx, pod)
}
