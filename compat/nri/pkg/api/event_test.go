package api_test

import (
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
)

func TestEventMask_SetClearInPlace(t *testing.T) {
	var m api.EventMask
	// Upstream-style calls that ignore the result must change the mask.
	m.Set(api.Event_RUN_POD_SANDBOX, api.Event_CREATE_CONTAINER)
	if m != 0x1|0x8 {
		t.Fatalf("after Set: %#x, want 0x9", int32(m))
	}
	m.Clear(api.Event_RUN_POD_SANDBOX)
	if m != 0x8 {
		t.Fatalf("after Clear: %#x, want 0x8", int32(m))
	}
	if got := m.Set(api.Event_STOP_CONTAINER).Clear(api.Event_CREATE_CONTAINER); got != &m || m != 1<<(api.Event_STOP_CONTAINER-1) {
		t.Fatalf("chained Set/Clear: %#x, returned %p, want %p", int32(m), got, &m)
	}
	// Values without a bit are ignored, not a panic.
	m.Set(api.Event_UNKNOWN, api.Event(-3), api.Event(33))
	m.Clear(api.Event_UNKNOWN, api.Event(40))
	if m != 1<<(api.Event_STOP_CONTAINER-1) {
		t.Fatalf("events without a bit changed the mask: %#x", int32(m))
	}
}

func TestEventMask_IsSet(t *testing.T) {
	m := api.MustParseEventMask("RunPodSandbox,ValidateContainerAdjustment")
	for _, tc := range []struct {
		e    api.Event
		want bool
	}{
		{api.Event_RUN_POD_SANDBOX, true},
		{api.Event_VALIDATE_CONTAINER_ADJUSTMENT, true},
		{api.Event_CREATE_CONTAINER, false},
		{api.Event_UNKNOWN, false},
		{api.Event(99), false},
	} {
		t.Run(tc.e.String(), func(t *testing.T) {
			if got := m.IsSet(tc.e); got != tc.want {
				t.Errorf("IsSet(%v) = %v, want %v", tc.e, got, tc.want)
			}
		})
	}
}

func TestValidEvents(t *testing.T) {
	if api.ValidEvents != 0x3FFF {
		t.Errorf("ValidEvents = %#x, want 0x3FFF (upstream's fourteen events)", int32(api.ValidEvents))
	}
	if len(api.EventPrettyNames) != 14 {
		t.Errorf("EventPrettyNames has %d entries, want 14", len(api.EventPrettyNames))
	}
	for e, name := range api.EventPrettyNames {
		if e.PrettyName() != name {
			t.Errorf("EventPrettyNames[%v] = %q, PrettyName %q", e, name, e.PrettyName())
		}
	}
	if api.Event_LAST.String() != "LAST" {
		t.Errorf("Event_LAST is %v, want the enum's LAST", api.Event_LAST)
	}
}

func TestParseEventMask(t *testing.T) {
	const (
		pod       = 0x1 | 0x2 | 0x4 | 0x800 | 0x1000 // Run, Stop, Remove, Update, PostUpdate PodSandbox
		container = 0x7F8 | 0x2000                   // the container events and ValidateContainerAdjustment
	)
	for _, tc := range []struct {
		name string
		in   []string
		want api.EventMask
		err  string
	}{
		{name: "none", in: nil, want: 0},
		{name: "one", in: []string{"RunPodSandbox"}, want: 0x1},
		{name: "case and spaces", in: []string{" runpodsandbox , CREATECONTAINER"}, want: 0x1 | 0x8},
		{name: "several arguments", in: []string{"StopPodSandbox", "PostStartContainer,RemoveContainer"}, want: 0x2 | 0x40 | 0x400},
		{name: "all", in: []string{"all"}, want: 0x3FFF},
		{name: "pod", in: []string{"pod"}, want: pod},
		{name: "podsandbox", in: []string{"PodSandbox"}, want: pod},
		{name: "container includes validation", in: []string{"container"}, want: container},
		{name: "pod and container", in: []string{"pod,container"}, want: 0x3FFF},
		{name: "validation", in: []string{"ValidateContainerAdjustment"}, want: 0x2000},
		{name: "empty", in: []string{""}, err: `unknown event ""`},
		{name: "empty in list", in: []string{"RunPodSandbox,"}, err: `unknown event ""`},
		{name: "unknown", in: []string{"RunPodSandbox,Bogus"}, err: `unknown event "Bogus"`},
		{name: "underscores are not names", in: []string{"RUN_POD_SANDBOX"}, err: `unknown event "RUN_POD_SANDBOX"`},
		{name: "extension event is not upstream's", in: []string{"PodSandboxStatus"}, err: `unknown event "PodSandboxStatus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := api.ParseEventMask(tc.in...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %#x, %v; want error containing %q", int32(got), err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %#x, %v; want %#x", int32(got), err, int32(tc.want))
			}
		})
	}
}

func TestMustParseEventMask(t *testing.T) {
	if got := api.MustParseEventMask("RunPodSandbox", "CreateContainer"); got != 0x9 {
		t.Errorf("got %#x, want 0x9", int32(got))
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"nope"`) {
			t.Errorf("recovered %v, want a panic naming the event", r)
		}
	}()
	api.MustParseEventMask("nope")
}

func TestEventMask_PrettyString(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   api.EventMask
		want string
	}{
		{"empty", 0, ""},
		{"one", 0x1, "RunPodSandbox"},
		{"ordered by event", 0x2000 | 0x8 | 0x1, "RunPodSandbox,CreateContainer,ValidateContainerAdjustment"},
		{"extension event", 0x4000, "PodSandboxStatus"},
		{"unknown bits", 0x1 | 0x10000 | 0x40000, "RunPodSandbox,unknown(0x50000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.in
			if got := m.PrettyString(); got != tc.want {
				t.Errorf("%#x.PrettyString() = %q, want %q", int32(tc.in), got, tc.want)
			}
			if m != tc.in {
				t.Errorf("PrettyString changed the mask to %#x", int32(m))
			}
		})
	}
}
