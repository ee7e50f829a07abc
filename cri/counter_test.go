package cri_test

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
)

// counter is an in-process NRI plugin that counts pod events and can fail
// RunPodSandbox.
type counter struct {
	mu       sync.Mutex
	failRuns int // RunPodSandbox calls still to fail
	// hold, if set, makes RunPodSandbox announce the pod on entered and
	// wait until hold is closed.
	hold    chan struct{}
	entered chan string
	events  []string
	// netnsAtStop records, per pod, whether its namespace existed when
	// StopPodSandbox arrived.
	netnsAtStop map[string]bool
}

func (c *counter) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	if c.hold != nil {
		c.entered <- pod.GetId()
		<-c.hold
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, "RunPodSandbox "+pod.GetId())
	if c.failRuns > 0 {
		c.failRuns--
		return errors.New("counter: refusing the pod as told")
	}
	return nil
}

func (c *counter) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, "StopPodSandbox "+pod.GetId())
	if c.netnsAtStop == nil {
		c.netnsAtStop = map[string]bool{}
	}
	c.netnsAtStop[pod.GetId()] = pod.NetNSPath() != "" && exists(pod.NetNSPath())
	return nil
}

func (c *counter) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, "RemovePodSandbox "+pod.GetId())
	return nil
}

// count returns how often event arrived for the pod.
func (c *counter) count(event, id string) int {
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

// startCounter connects c to the env's runtime as 20-counter and waits
// until it has joined. It must be started again after a restart.
func (e *env) startCounter(c *counter) {
	e.t.Helper()
	s, err := plugin.New(c, plugin.WithPluginName("counter"), plugin.WithPluginIdx("20"), plugin.WithSocketPath(e.nriSock))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(s.Stop)
	rt := e.rt
	testutil.WaitFor(e.t, "20-counter to join", 10*time.Second, func() bool {
		for _, p := range rt.Plugins() {
			if p.Name == "20-counter" {
				return true
			}
		}
		return false
	})
}
