package api

import (
	"fmt"
	"math/bits"
	"strings"
)

// EventMask is a set of events, in the encoding of the events field of
// ConfigureResponse: event e is in the set when bit 1<<(e-1) is set.
//
// Methods never modify the receiver; Set and Clear return a new mask.
type EventMask int32

// Predefined event masks.
const (
	// ValidEvents holds every event a plugin can subscribe to, from
	// Event_RUN_POD_SANDBOX to Event_POD_SANDBOX_STATUS (0x7FFF).
	ValidEvents EventMask = EventMask(1)<<(Event_LAST-1) - 1

	// ClassicEvents holds the events of containerd NRI v0.12.5, from
	// Event_RUN_POD_SANDBOX to Event_VALIDATE_CONTAINER_ADJUSTMENT
	// (0x3FFF). Upstream runtimes refuse a subscription with other bits.
	ClassicEvents EventMask = EventMask(1)<<(Event_VALIDATE_CONTAINER_ADJUSTMENT) - 1

	// NetworkEvents holds the events of the pod network extension, which
	// only runtimes advertising it in ConfigureRequest deliver.
	NetworkEvents EventMask = 1 << (Event_POD_SANDBOX_STATUS - 1)

	// PodEvents holds the pod sandbox lifecycle events.
	PodEvents EventMask = 1<<(Event_RUN_POD_SANDBOX-1) |
		1<<(Event_STOP_POD_SANDBOX-1) |
		1<<(Event_REMOVE_POD_SANDBOX-1) |
		1<<(Event_UPDATE_POD_SANDBOX-1) |
		1<<(Event_POST_UPDATE_POD_SANDBOX-1)

	// ContainerEvents holds the container lifecycle events. Unlike
	// upstream NRI it does not include Event_VALIDATE_CONTAINER_ADJUSTMENT,
	// which only validating plugins should ask for.
	ContainerEvents EventMask = 1<<(Event_CREATE_CONTAINER-1) |
		1<<(Event_POST_CREATE_CONTAINER-1) |
		1<<(Event_START_CONTAINER-1) |
		1<<(Event_POST_START_CONTAINER-1) |
		1<<(Event_UPDATE_CONTAINER-1) |
		1<<(Event_POST_UPDATE_CONTAINER-1) |
		1<<(Event_STOP_CONTAINER-1) |
		1<<(Event_REMOVE_CONTAINER-1)

	// ValidationEvents holds the adjustment validation event.
	ValidationEvents EventMask = 1 << (Event_VALIDATE_CONTAINER_ADJUSTMENT - 1)
)

// eventMethods maps each real event to its Plugin service method.
var eventMethods = [...]string{
	Event_RUN_POD_SANDBOX:               "RunPodSandbox",
	Event_STOP_POD_SANDBOX:              "StopPodSandbox",
	Event_REMOVE_POD_SANDBOX:            "RemovePodSandbox",
	Event_CREATE_CONTAINER:              "CreateContainer",
	Event_POST_CREATE_CONTAINER:         "PostCreateContainer",
	Event_START_CONTAINER:               "StartContainer",
	Event_POST_START_CONTAINER:          "PostStartContainer",
	Event_UPDATE_CONTAINER:              "UpdateContainer",
	Event_POST_UPDATE_CONTAINER:         "PostUpdateContainer",
	Event_STOP_CONTAINER:                "StopContainer",
	Event_REMOVE_CONTAINER:              "RemoveContainer",
	Event_UPDATE_POD_SANDBOX:            "UpdatePodSandbox",
	Event_POST_UPDATE_POD_SANDBOX:       "PostUpdatePodSandbox",
	Event_VALIDATE_CONTAINER_ADJUSTMENT: "ValidateContainerAdjustment",
	Event_POD_SANDBOX_STATUS:            "PodSandboxStatus",
}

// eventGroups are the group names ParseEventMask accepts besides the
// event names.
var eventGroups = map[string]EventMask{
	"all":        ValidEvents,
	"pod":        PodEvents,
	"podsandbox": PodEvents,
	"container":  ContainerEvents,
	"validate":   ValidationEvents,
	"network":    NetworkEvents,
}

// Method returns the name of the Plugin service method that delivers e,
// such as "RunPodSandbox", or "" if e is not a real event (Event_UNKNOWN,
// Event_LAST or an unknown value).
func (e Event) Method() string {
	if e <= Event_UNKNOWN || int(e) >= len(eventMethods) {
		return ""
	}
	return eventMethods[e]
}

// PrettyName returns the human-friendly name of e, which is its Plugin
// service method (see Method), such as "RunPodSandbox", or "unknown(N)"
// for a value that is not a real event, as upstream NRI's Event.PrettyName
// does. Unlike upstream, Event_POD_SANDBOX_STATUS, the event of the pod
// network extension, has a name: "PodSandboxStatus".
func (e Event) PrettyName() string {
	if m := e.Method(); m != "" {
		return m
	}
	return fmt.Sprintf("unknown(%d)", int32(e))
}

// bit returns the mask bit of e, or 0 if e has no bit (e < 1 or e > 32).
func (e Event) bit() EventMask {
	if e < 1 || e > 32 {
		return 0
	}
	return EventMask(uint32(1) << (e - 1))
}

// MaskFor returns the mask holding exactly the given events.
func MaskFor(events ...Event) EventMask {
	return EventMask(0).Set(events...)
}

// IsSet reports whether e is in m.
func (m EventMask) IsSet(e Event) bool {
	b := e.bit()
	return b != 0 && m&b != 0
}

// Set returns m with the given events added. Values without a mask bit
// (Event_UNKNOWN, negative values and values above 32) are ignored.
func (m EventMask) Set(events ...Event) EventMask {
	for _, e := range events {
		m |= e.bit()
	}
	return m
}

// Clear returns m with the given events removed.
func (m EventMask) Clear(events ...Event) EventMask {
	for _, e := range events {
		m &^= e.bit()
	}
	return m
}

// Events returns the events in m in ascending order, including any
// unknown bits as the Event values they encode.
func (m EventMask) Events() []Event {
	var events []Event
	for u := uint32(m); u != 0; u &= u - 1 {
		events = append(events, Event(bits.TrailingZeros32(u)+1))
	}
	return events
}

// Validate returns an error if m has bits set outside ValidEvents.
func (m EventMask) Validate() error {
	if bad := m &^ ValidEvents; bad != 0 {
		return fmt.Errorf("api: invalid event mask %#x: unknown bits %#x", uint32(m), uint32(bad))
	}
	return nil
}

// String returns the method names of the events in m joined by ",", for
// example "RunPodSandbox,CreateContainer". Unknown bits are shown as one
// trailing hexadecimal number. The empty mask yields "".
func (m EventMask) String() string {
	var names []string
	for _, e := range (m & ValidEvents).Events() {
		names = append(names, e.Method())
	}
	if bad := m &^ ValidEvents; bad != 0 {
		names = append(names, fmt.Sprintf("%#x", uint32(bad)))
	}
	return strings.Join(names, ",")
}

// ParseEventMask parses a comma separated list of event and group names.
// Names are matched ignoring case, surrounding spaces and underscores, so
// "RunPodSandbox", "runpodsandbox" and "RUN_POD_SANDBOX" are the same.
// An event name is the Plugin method that delivers it (see Event.Method).
// The groups are:
//
//   - all: every event (ValidEvents)
//   - pod or podsandbox: every pod event (PodEvents)
//   - container: every container event, without validation (ContainerEvents)
//   - validate: ValidateContainerAdjustment (ValidationEvents)
//
// The empty string yields the empty mask; empty or unknown names in a list
// are errors.
func ParseEventMask(s string) (EventMask, error) {
	if s == "" {
		return 0, nil
	}
	var m EventMask
	for name := range strings.SplitSeq(s, ",") {
		key := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), "_", ""))
		if key == "" {
			return 0, fmt.Errorf("api: invalid event list %q: empty event name", s)
		}
		if g, ok := eventGroups[key]; ok {
			m |= g
			continue
		}
		e := eventByKey(key)
		if e == Event_UNKNOWN {
			return 0, fmt.Errorf("api: invalid event list %q: unknown event %q", s, strings.TrimSpace(name))
		}
		m = m.Set(e)
	}
	return m, nil
}

// eventByKey returns the event whose lower-cased method name is key, or
// Event_UNKNOWN.
func eventByKey(key string) Event {
	for e, method := range eventMethods {
		if method != "" && strings.ToLower(method) == key {
			return Event(e)
		}
	}
	return Event_UNKNOWN
}
