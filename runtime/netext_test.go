package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

// extensionProbe records whether the runtime advertised the pod network
// extension and subscribes to the events its mask names.
type extensionProbe struct {
	mask api.EventMask
	seen chan uint32
}

func (p *extensionProbe) Configure(ctx context.Context, _, _, _ string) (api.EventMask, error) {
	info, _ := plugin.RuntimeInfoFromContext(ctx)
	p.seen <- info.NetworkExtension
	return p.mask, nil
}

func (p *extensionProbe) RunPodSandbox(context.Context, *api.PodSandbox) error { return nil }

// TestRuntime_WithoutNetworkExtension: a runtime that does not offer the
// pod network extension does not advertise it, and refuses, as an
// upstream runtime does, a plugin subscribing to its event.
func TestRuntime_WithoutNetworkExtension(t *testing.T) {
	if _, err := runtime.New("test", "v1", runtime.WithoutNetworkExtension(), runtime.WithRequiredNetworkPlugins("net")); err == nil ||
		!strings.Contains(err.Error(), "WithRequiredNetworkPlugins") {
		t.Errorf("New with required network plugins and no extension = %v, want an error naming both", err)
	}

	e := newEnv(t, runtime.WithoutNetworkExtension())
	classic := &extensionProbe{mask: api.MaskFor(api.Event_RUN_POD_SANDBOX), seen: make(chan uint32, 1)}
	e.startPlugin(classic, "10", "classic")
	if v := <-classic.seen; v != 0 {
		t.Errorf("the runtime advertised the network extension version %d", v)
	}

	status := &extensionProbe{mask: api.MaskFor(api.Event_RUN_POD_SANDBOX, api.Event_POD_SANDBOX_STATUS), seen: make(chan uint32, 1)}
	s, err := plugin.New(status, plugin.WithPluginName("status"), plugin.WithPluginIdx("20"), plugin.WithSocketPath(e.sock))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil {
		s.Stop()
		t.Fatal("a plugin subscribing to PodSandboxStatus joined a runtime without the network extension")
	}
	<-status.seen
	if !contains(e.logs.String(), "PodSandboxStatus") || e.joined("20-status") {
		t.Errorf("the refusal is not logged naming the event, or the plugin joined:\n%s", e.logs)
	}
}
