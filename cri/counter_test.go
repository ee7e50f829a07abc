package cri_test

import (
	"context"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugin"
)

type counter = testutil.PodCounter

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
