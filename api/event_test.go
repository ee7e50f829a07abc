package api_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
	"google.golang.org/protobuf/reflect/protoreflect"
)

func TestEventMaskConstants(t *testing.T) {
	tests := []struct {
		name string
		got  api.EventMask
		want api.EventMask
	}{
		{"ValidEvents", api.ValidEvents, 0x7FFF},
		{"ClassicEvents", api.ClassicEvents, 0x3FFF},
		{"NetworkEvents", api.NetworkEvents, 0x4000},
		{"PodEvents", api.PodEvents, 0x0001 | 0x0002 | 0x0004 | 0x0800 | 0x1000},
		{"ContainerEvents", api.ContainerEvents, 0x07F8},
		{"ValidationEvents", api.ValidationEvents, 0x2000},
		{"union", api.PodEvents | api.ContainerEvents | api.ValidationEvents, api.ClassicEvents},
		{"union with network", api.ClassicEvents | api.NetworkEvents, api.ValidEvents},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %#x, want %#x", tt.name, tt.got, tt.want)
		}
	}
}

func TestEventMethod(t *testing.T) {
	tests := []struct {
		event api.Event
		want  string
	}{
		{api.Event_UNKNOWN, ""},
		{api.Event_RUN_POD_SANDBOX, "RunPodSandbox"},
		{api.Event_STOP_POD_SANDBOX, "StopPodSandbox"},
		{api.Event_REMOVE_POD_SANDBOX, "RemovePodSandbox"},
		{api.Event_CREATE_CONTAINER, "CreateContainer"},
		{api.Event_POST_CREATE_CONTAINER, "PostCreateContainer"},
		{api.Event_START_CONTAINER, "StartContainer"},
		{api.Event_POST_START_CONTAINER, "PostStartContainer"},
		{api.Event_UPDATE_CONTAINER, "UpdateContainer"},
		{api.Event_POST_UPDATE_CONTAINER, "PostUpdateContainer"},
		{api.Event_STOP_CONTAINER, "StopContainer"},
		{api.Event_REMOVE_CONTAINER, "RemoveContainer"},
		{api.Event_UPDATE_POD_SANDBOX, "UpdatePodSandbox"},
		{api.Event_POST_UPDATE_POD_SANDBOX, "PostUpdatePodSandbox"},
		{api.Event_VALIDATE_CONTAINER_ADJUSTMENT, "ValidateContainerAdjustment"},
		{api.Event_LAST, ""},
		{api.Event(-1), ""},
		{api.Event(99), ""},
	}
	for _, tt := range tests {
		if got := tt.event.Method(); got != tt.want {
			t.Errorf("Event(%d).Method() = %q, want %q", tt.event, got, tt.want)
		}
	}
}

// Every real event must be delivered by a method of the Plugin service
// whose name matches the event's enum name.
func TestEventMethodInPluginService(t *testing.T) {
	svc := api.File_pkg_api_api_proto.Services().ByName("Plugin")
	if svc == nil {
		t.Fatal("Plugin service not found in descriptor")
	}
	for e := api.Event_RUN_POD_SANDBOX; e < api.Event_LAST; e++ {
		m := e.Method()
		if svc.Methods().ByName(protoreflect.Name(m)) == nil {
			t.Errorf("Event %v: no Plugin method %q", e, m)
		}
		if enum := strings.ReplaceAll(e.String(), "_", ""); !strings.EqualFold(enum, m) {
			t.Errorf("Event %v: method %q does not match enum name", e, m)
		}
	}
}

func TestEventMaskSetClearIsSet(t *testing.T) {
	tests := []struct {
		name  string
		mask  api.EventMask
		want  api.EventMask
		set   []api.Event
		unset []api.Event
	}{
		{
			name:  "empty",
			mask:  api.MaskFor(),
			want:  0,
			unset: []api.Event{api.Event_UNKNOWN, api.Event_RUN_POD_SANDBOX, api.Event_LAST},
		},
		{
			name:  "first and last",
			mask:  api.MaskFor(api.Event_RUN_POD_SANDBOX, api.Event_VALIDATE_CONTAINER_ADJUSTMENT),
			want:  0x2001,
			set:   []api.Event{api.Event_RUN_POD_SANDBOX, api.Event_VALIDATE_CONTAINER_ADJUSTMENT},
			unset: []api.Event{api.Event_STOP_POD_SANDBOX, api.Event_UNKNOWN},
		},
		{
			name: "set is idempotent",
			mask: api.MaskFor(api.Event_CREATE_CONTAINER).Set(api.Event_CREATE_CONTAINER),
			want: 0x8,
			set:  []api.Event{api.Event_CREATE_CONTAINER},
		},
		{
			name:  "unknown and negative ignored",
			mask:  api.MaskFor(api.Event_UNKNOWN, api.Event(-3), api.Event(33)),
			want:  0,
			unset: []api.Event{api.Event_UNKNOWN, api.Event(-3), api.Event(33)},
		},
		{
			name: "LAST sets an invalid bit",
			mask: api.MaskFor(api.Event_LAST),
			want: 0x8000,
			set:  []api.Event{api.Event_LAST},
		},
		{
			name: "bit 31",
			mask: api.MaskFor(api.Event(32)),
			want: api.EventMask(-1 << 31),
			set:  []api.Event{api.Event(32)},
		},
		{
			name:  "clear",
			mask:  api.ValidEvents.Clear(api.Event_CREATE_CONTAINER, api.Event_UNKNOWN, api.Event_STOP_CONTAINER),
			want:  0x7FFF &^ 0x8 &^ 0x200,
			set:   []api.Event{api.Event_RUN_POD_SANDBOX, api.Event_POST_CREATE_CONTAINER},
			unset: []api.Event{api.Event_CREATE_CONTAINER, api.Event_STOP_CONTAINER},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mask != tt.want {
				t.Errorf("mask = %#x, want %#x", tt.mask, tt.want)
			}
			for _, e := range tt.set {
				if !tt.mask.IsSet(e) {
					t.Errorf("IsSet(%v) = false, want true", e)
				}
			}
			for _, e := range tt.unset {
				if tt.mask.IsSet(e) {
					t.Errorf("IsSet(%v) = true, want false", e)
				}
			}
		})
	}
}

func TestEventMaskValueSemantics(t *testing.T) {
	m := api.MaskFor(api.Event_RUN_POD_SANDBOX)
	_ = m.Set(api.Event_STOP_POD_SANDBOX)
	_ = m.Clear(api.Event_RUN_POD_SANDBOX)
	if m != 0x1 {
		t.Errorf("Set/Clear modified the receiver: %#x", m)
	}
}

func TestEventMaskEvents(t *testing.T) {
	tests := []struct {
		mask api.EventMask
		want []api.Event
	}{
		{0, nil},
		{0x1, []api.Event{api.Event_RUN_POD_SANDBOX}},
		{0x2008, []api.Event{api.Event_CREATE_CONTAINER, api.Event_VALIDATE_CONTAINER_ADJUSTMENT}},
		{0x8000, []api.Event{16}},
	}
	for _, tt := range tests {
		if got := tt.mask.Events(); !slices.Equal(got, tt.want) {
			t.Errorf("EventMask(%#x).Events() = %v, want %v", tt.mask, got, tt.want)
		}
	}
	if n := len(api.ValidEvents.Events()); n != 15 {
		t.Errorf("ValidEvents has %d events, want 15", n)
	}
}

func TestEventMaskValidate(t *testing.T) {
	tests := []struct {
		mask    api.EventMask
		wantErr string
	}{
		{0, ""},
		{api.ValidEvents, ""},
		{0x1, ""},
		{0x8000, "api: invalid event mask 0x8000: unknown bits 0x8000"},
		{0x8001, "api: invalid event mask 0x8001: unknown bits 0x8000"},
		{-1, "api: invalid event mask 0xffffffff: unknown bits 0xffff8000"},
	}
	for _, tt := range tests {
		err := tt.mask.Validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("EventMask(%#x).Validate() = %v, want nil", tt.mask, err)
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
			t.Errorf("EventMask(%#x).Validate() = %v, want %q", tt.mask, err, tt.wantErr)
		}
	}
}

func TestEventMaskString(t *testing.T) {
	tests := []struct {
		mask api.EventMask
		want string
	}{
		{0, ""},
		{0x1, "RunPodSandbox"},
		{0x2008, "CreateContainer,ValidateContainerAdjustment"},
		{api.PodEvents, "RunPodSandbox,StopPodSandbox,RemovePodSandbox,UpdatePodSandbox,PostUpdatePodSandbox"},
		{0x18001, "RunPodSandbox,0x18000"},
	}
	for _, tt := range tests {
		if got := tt.mask.String(); got != tt.want {
			t.Errorf("EventMask(%#x).String() = %q, want %q", tt.mask, got, tt.want)
		}
	}
}

func TestParseEventMask(t *testing.T) {
	tests := []struct {
		in      string
		want    api.EventMask
		wantErr string
	}{
		{in: "", want: 0},
		{in: "runpodsandbox", want: 0x1},
		{in: "RunPodSandbox", want: 0x1},
		{in: "RUN_POD_SANDBOX", want: 0x1},
		{in: " CreateContainer , stopcontainer ", want: 0x8 | 0x200},
		{in: "all", want: api.ValidEvents},
		{in: "ALL", want: api.ValidEvents},
		{in: "pod", want: api.PodEvents},
		{in: "podsandbox", want: api.PodEvents},
		{in: "container", want: 0x07F8},
		{in: "validate", want: 0x2000},
		{in: "validatecontaineradjustment", want: 0x2000},
		{in: "container,validate", want: 0x27F8},
		{in: "pod,container,validate", want: api.ClassicEvents},
		{in: "pod,container,validate,network", want: api.ValidEvents},
		{in: "updatepodsandbox,updatepodsandbox", want: 0x800},
		{in: "nosuchevent", wantErr: `api: invalid event list "nosuchevent": unknown event "nosuchevent"`},
		{in: "pod,,container", wantErr: `api: invalid event list "pod,,container": empty event name`},
		{in: "unknown", wantErr: `api: invalid event list "unknown": unknown event "unknown"`},
		{in: "last", wantErr: `api: invalid event list "last": unknown event "last"`},
		{in: ",", wantErr: `api: invalid event list ",": empty event name`},
	}
	for _, tt := range tests {
		got, err := api.ParseEventMask(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseEventMask(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseEventMask(%q) = %#x, %v; want %#x, nil", tt.in, got, err, tt.want)
		}
	}
}

func TestParseEventMaskRoundTrip(t *testing.T) {
	for e := api.Event_RUN_POD_SANDBOX; e < api.Event_LAST; e++ {
		for _, m := range []api.EventMask{api.MaskFor(e), api.ValidEvents.Clear(e)} {
			got, err := api.ParseEventMask(m.String())
			if err != nil || got != m {
				t.Errorf("ParseEventMask(%q) = %#x, %v; want %#x", m.String(), got, err, m)
			}
		}
	}
}

func ExampleParseEventMask() {
	m, err := api.ParseEventMask("pod,CreateContainer")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%#x\n", int32(m))
	fmt.Println(m.IsSet(api.Event_CREATE_CONTAINER), m.IsSet(api.Event_START_CONTAINER))
	fmt.Println(m)
	// Output:
	// 0x180f
	// true false
	// RunPodSandbox,StopPodSandbox,RemovePodSandbox,CreateContainer,UpdatePodSandbox,PostUpdatePodSandbox
}

func ExampleEventMask_Validate() {
	fmt.Println(api.MaskFor(api.Event_CREATE_CONTAINER).Validate())
	fmt.Println(api.EventMask(0x8000).Validate())
	// Output:
	// <nil>
	// api: invalid event mask 0x8000: unknown bits 0x8000
}

func ExampleEvent_Method() {
	fmt.Println(api.Event_POST_UPDATE_POD_SANDBOX.Method())
	// Output:
	// PostUpdatePodSandbox
}

func TestEventPrettyName(t *testing.T) {
	for _, tt := range []struct {
		event api.Event
		want  string
	}{
		{api.Event_UNKNOWN, "unknown(0)"},
		{api.Event_RUN_POD_SANDBOX, "RunPodSandbox"},
		{api.Event_VALIDATE_CONTAINER_ADJUSTMENT, "ValidateContainerAdjustment"},
		{api.Event_POD_SANDBOX_STATUS, "PodSandboxStatus"},
		{api.Event_LAST, "unknown(16)"},
		{api.Event(-1), "unknown(-1)"},
		{api.Event(99), "unknown(99)"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.event.PrettyName(); got != tt.want {
				t.Errorf("Event(%d).PrettyName() = %q, want %q", tt.event, got, tt.want)
			}
		})
	}
	// Every real event is named after its Plugin method.
	for e := api.Event_UNKNOWN + 1; e < api.Event_LAST; e++ {
		if e.PrettyName() != e.Method() {
			t.Errorf("Event(%d).PrettyName() = %q, Method() = %q", e, e.PrettyName(), e.Method())
		}
	}
}
