package testutil

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/nrinet/nrinet/api"
)

// PodCounter is an in-process NRI plugin handler (for the plugin library)
// that records pod events, can fail RunPodSandbox, and can hold it.
type PodCounter struct {
	// FailRuns is how many RunPodSandbox calls still fail.
	FailRuns int
	// Hold, if set, makes RunPodSandbox send the pod ID on Entered and
	// wait until Hold is closed.
	Hold    chan struct{}
	Entered chan string

	mu          sync.Mutex // guards the fields below and FailRuns
	events      []string
	netnsAtStop map[string]bool
}

// RunPodSandbox records the event, then holds or fails as configured.
func (c *PodCounter) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	if c.Hold != nil {
		c.Entered <- pod.GetId()
		<-c.Hold
	}
	c.record("RunPodSandbox", pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.FailRuns > 0 {
		c.FailRuns--
		return errors.New("counter: refusing the pod as told")
	}
	return nil
}

// StopPodSandbox records the event and whether the pod's network
// namespace still existed.
func (c *PodCounter) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	c.record("StopPodSandbox", pod)
	return nil
}

// RemovePodSandbox records the event.
func (c *PodCounter) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	c.record("RemovePodSandbox", pod)
	return nil
}

func (c *PodCounter) record(ev string, pod *api.PodSandbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev+" "+pod.GetId())
	if ev == "StopPodSandbox" {
		if c.netnsAtStop == nil {
			c.netnsAtStop = map[string]bool{}
		}
		_, err := os.Stat(pod.NetNSPath())
		c.netnsAtStop[pod.GetId()] = pod.NetNSPath() != "" && err == nil
	}
}

// Count returns how often event arrived for the pod.
func (c *PodCounter) Count(event, id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.events {
		if e == event+" "+id {
			n++
		}
	}
	return n
}

// NetNSAtStop reports whether the pod's namespace existed when its
// StopPodSandbox arrived.
func (c *PodCounter) NetNSAtStop(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.netnsAtStop[id]
}
