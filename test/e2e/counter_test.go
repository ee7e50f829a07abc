package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
)

// counter is an NRI plugin, run in the test process against the daemon's
// NRI socket, that records pod events.
type counter = testutil.PodCounter

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
	testutil.RuntimeStatus
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
