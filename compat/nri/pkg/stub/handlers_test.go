package stub

import (
	"context"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
)

type (
	noEvents struct{}
	podRun   struct{}
	ctrLife  struct{}
	validate struct{}
)

func (noEvents) Configure(context.Context, string, string, string) (api.EventMask, error) {
	return 0, nil
}
func (noEvents) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	return nil, nil
}
func (noEvents) Shutdown(context.Context) {}

func (podRun) RunPodSandbox(context.Context, *api.PodSandbox) error { return nil }

func (ctrLife) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}
func (ctrLife) StopContainer(context.Context, *api.PodSandbox, *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, nil
}
func (ctrLife) RemoveContainer(context.Context, *api.PodSandbox, *api.Container) error { return nil }

func (validate) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) error {
	return nil
}

func TestHandledEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plugin any
		want   string // as api.ParseEventMask takes it; "" for none
	}{
		{"nil", nil, ""},
		{"Configure, Synchronize and Shutdown are no events", noEvents{}, ""},
		{"one pod event", podRun{}, "RunPodSandbox"},
		{"container events", ctrLife{}, "CreateContainer,StopContainer,RemoveContainer"},
		{"validator", validate{}, "ValidateContainerAdjustment"},
		{"every interface", &allEvents{}, "all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := mask(t, tc.want)
			if got := handledEvents(tc.plugin); got != want {
				t.Errorf("handledEvents = %s, want %s", got.PrettyString(), want.PrettyString())
			}
		})
	}
}

func TestSubscription(t *testing.T) {
	for _, tc := range []struct {
		name               string
		handled, requested string
		want               string
		wantErr            string
	}{
		{name: "no Configure or a zero mask: everything handled", handled: "RunPodSandbox,StopPodSandbox", want: "RunPodSandbox,StopPodSandbox"},
		{name: "a subset", handled: "all", requested: "CreateContainer,UpdateContainer", want: "CreateContainer,UpdateContainer"},
		{name: "all handled", handled: "RunPodSandbox", requested: "RunPodSandbox", want: "RunPodSandbox"},
		{name: "an unhandled event", handled: "RunPodSandbox", requested: "RunPodSandbox,StopContainer", wantErr: "StopContainer (0x200)"},
		{name: "the validator when the plugin does not validate", handled: "CreateContainer,StopContainer", requested: "ValidateContainerAdjustment,CreateContainer",
			wantErr: "no handler for: ValidateContainerAdjustment (0x2000)"},
		{name: "a bit beyond upstream's events", handled: "all", requested: "0x4000", wantErr: "PodSandboxStatus (0x4000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := subscription(mask(t, tc.handled), mask(t, tc.requested))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("subscription = %s, %v; want an error containing %q", got.PrettyString(), err, tc.wantErr)
				}
				return
			}
			if want := mask(t, tc.want); err != nil || got != want {
				t.Fatalf("subscription = %s, %v; want %s", got.PrettyString(), err, want.PrettyString())
			}
		})
	}
}

// mask parses a test's event list; "0x..." is a raw mask.
func mask(t *testing.T, events string) api.EventMask {
	t.Helper()
	if raw, ok := strings.CutPrefix(events, "0x"); ok {
		var m api.EventMask
		for _, c := range raw {
			m = m<<4 | api.EventMask(strings.IndexRune("0123456789abcdef", c))
		}
		return m
	}
	if events == "" {
		return 0
	}
	return api.MustParseEventMask(events)
}

// allEvents implements every event interface.
type allEvents struct{ podRun }

func (*allEvents) UpdatePodSandbox(context.Context, *api.PodSandbox, *api.LinuxResources, *api.LinuxResources) error {
	return nil
}
func (*allEvents) PostUpdatePodSandbox(context.Context, *api.PodSandbox) error { return nil }
func (*allEvents) StopPodSandbox(context.Context, *api.PodSandbox) error       { return nil }
func (*allEvents) RemovePodSandbox(context.Context, *api.PodSandbox) error     { return nil }
func (*allEvents) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}
func (*allEvents) PostCreateContainer(context.Context, *api.PodSandbox, *api.Container) error {
	return nil
}
func (*allEvents) StartContainer(context.Context, *api.PodSandbox, *api.Container) error { return nil }
func (*allEvents) PostStartContainer(context.Context, *api.PodSandbox, *api.Container) error {
	return nil
}
func (*allEvents) UpdateContainer(context.Context, *api.PodSandbox, *api.Container, *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	return nil, nil
}
func (*allEvents) PostUpdateContainer(context.Context, *api.PodSandbox, *api.Container) error {
	return nil
}
func (*allEvents) StopContainer(context.Context, *api.PodSandbox, *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, nil
}
func (*allEvents) RemoveContainer(context.Context, *api.PodSandbox, *api.Container) error { return nil }
func (*allEvents) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) error {
	return nil
}
