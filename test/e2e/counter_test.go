package e2e

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
)

// counter is an NRI plugin, run in the test process against the daemon's
// NRI socket, that records pod events.
type counter struct {
	mu     sync.Mutex
	events []string
	// netnsAtStop records, per pod, whether its namespace existed when
	// StopPodSandbox arrived.
	netnsAtStop map[string]bool
}

func (c *counter) record(ev string, pod *api.PodSandbox) {
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

func (c *counter) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	c.record("StopPodSandbox", pod)
	return nil
}

func (c *counter) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	c.record("RemovePodSandbox", pod)
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

// startCounter connects c to the daemon as 20-counter and waits until
// crictl info lists it.
func (d *daemon) startCounter(c *counter) {
	d.t.Helper()
	s, err := plugin.New(c, plugin.WithPluginName("counter"), plugin.WithPluginIdx("20"), plugin.WithSocketPath(d.nriSock))
	if err != nil {
		d.t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(s.Stop)
	testutil.WaitFor(d.t, "20-counter in crictl info", 10*time.Second, func() bool {
		return slices.Contains(d.info().NRI.plugins(), "20-counter")
	})
}

// runtimeInfo is what the tests read of crictl info -o json.
type runtimeInfo struct {
	Status struct {
		Conditions []struct {
			Type    string `json:"type"`
			Status  bool   `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
	} `json:"status"`
	NRI nriInfo `json:"nri"`
}

type nriInfo struct {
	NetworkReady bool `json:"networkReady"`
	Plugins      []struct {
		Name string `json:"name"`
	} `json:"plugins"`
}

func (n nriInfo) plugins() []string {
	var out []string
	for _, p := range n.Plugins {
		out = append(out, p.Name)
	}
	return out
}

// info runs crictl info -o json.
func (d *daemon) info() runtimeInfo {
	d.t.Helper()
	var i runtimeInfo
	out := d.must("info", "-o", "json")
	if err := json.Unmarshal([]byte(out), &i); err != nil {
		d.t.Fatalf("crictl info output: %v\n%s", err, out)
	}
	return i
}
