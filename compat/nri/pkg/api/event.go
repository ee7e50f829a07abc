package api

import (
	"fmt"
	"strings"

	nrinet "github.com/nrinet/nrinet/api"
)

// Requests and responses of the Plugin service that carry nothing.
type (
	// StateChangeResponse is the (empty) response to a StateChangeEvent.
	StateChangeResponse = Empty
	// ShutdownRequest is the (empty) request of Plugin.Shutdown.
	ShutdownRequest = Empty
	// ShutdownResponse is the (empty) response of Plugin.Shutdown.
	ShutdownResponse = Empty
)

// upstreamEvents is how many events upstream NRI v0.12.5 defines:
// Event_RUN_POD_SANDBOX (1) to Event_VALIDATE_CONTAINER_ADJUSTMENT (14).
const upstreamEvents = 14

// ValidEvents holds the fourteen events of upstream NRI, from
// Event_RUN_POD_SANDBOX to Event_VALIDATE_CONTAINER_ADJUSTMENT (0x3FFF):
// the events a runtime built on this package delivers. nrinet's extension
// event Event_POD_SANDBOX_STATUS (15) is not included; unlike upstream,
// ValidEvents is therefore not derived from Event_LAST, which is 16 here.
const ValidEvents = EventMask(1<<upstreamEvents - 1)

// EventPrettyNames maps the events of ValidEvents to their human-friendly
// names, the names of the Plugin service methods that deliver them.
// Event.PrettyName does not consult it (it is nrinet's method, which also
// names Event_POD_SANDBOX_STATUS), so changing the map changes nothing else.
var EventPrettyNames = func() map[Event]string {
	names := make(map[Event]string, upstreamEvents)
	for e := Event(1); e <= upstreamEvents; e++ {
		names[e] = e.PrettyName()
	}
	return names
}()

// EventMask is a set of events: event e is in the set when bit 1<<(e-1)
// is set, the encoding of the events field of ConfigureResponse.
//
// Set and Clear modify the mask they are called on, as upstream's do. It
// is a type of its own, not nrinet's api.EventMask, whose Set and Clear
// return a new mask; convert with nrinet.EventMask(m) where nrinet's is
// needed.
type EventMask int32

// bit returns the mask bit of e, or 0 for a value without one (below 1 or
// above 32).
func bit(e Event) EventMask {
	if e < 1 || e > 32 {
		return 0
	}
	return EventMask(uint32(1) << (e - 1))
}

// Set adds the given events to m and returns m. Values without a mask bit
// (Event_UNKNOWN, negative values, values above 32) are ignored, where
// upstream panics or sets nothing.
func (m *EventMask) Set(events ...Event) *EventMask {
	for _, e := range events {
		*m |= bit(e)
	}
	return m
}

// Clear removes the given events from m and returns m.
func (m *EventMask) Clear(events ...Event) *EventMask {
	for _, e := range events {
		*m &^= bit(e)
	}
	return m
}

// IsSet reports whether e is in m.
func (m *EventMask) IsSet(e Event) bool {
	b := bit(e)
	return b != 0 && *m&b != 0
}

// PrettyString returns the names of the events in m, separated by ",", as
// Event.PrettyName gives them (so bit 15 is "PodSandboxStatus", nrinet's
// extension event), followed by "unknown(0x...)" for any other bits.
func (m *EventMask) PrettyString() string {
	rest := *m
	var names []string
	for e := Event(1); e < nrinet.Event_LAST; e++ {
		if rest.IsSet(e) {
			names = append(names, e.PrettyName())
			rest.Clear(e)
		}
	}
	if rest != 0 {
		names = append(names, fmt.Sprintf("unknown(0x%x)", uint32(rest)))
	}
	return strings.Join(names, ",")
}

// ParseEventMask returns the mask of the events named in events. Each
// argument is a comma separated list of names, matched ignoring case and
// surrounding spaces: an event name is the Plugin method that delivers it,
// such as "RunPodSandbox" or "validatecontaineradjustment"; "all" stands
// for ValidEvents, "pod" and "podsandbox" for the events whose names
// contain "pod" (RunPodSandbox, UpdatePodSandbox, PostUpdatePodSandbox,
// StopPodSandbox, RemovePodSandbox) and "container" for those whose names
// contain "container" (ValidateContainerAdjustment included), as upstream.
// An empty or unknown name is an error naming it.
func ParseEventMask(events ...string) (EventMask, error) {
	var mask EventMask
	for _, list := range events {
		for name := range strings.SplitSeq(list, ",") {
			key := strings.ToLower(strings.TrimSpace(name))
			switch key {
			case "all":
				mask |= ValidEvents
				continue
			case "pod", "podsandbox":
				mask |= eventsNamedWith("pod")
				continue
			case "container":
				mask |= eventsNamedWith("container")
				continue
			}
			e := eventNamed(key)
			if e == Event_UNKNOWN {
				return 0, fmt.Errorf("api: invalid event list %q: unknown event %q", list, name)
			}
			mask.Set(e)
		}
	}
	return mask, nil
}

// MustParseEventMask is ParseEventMask for names known to be valid: it
// panics if they are not.
func MustParseEventMask(events ...string) EventMask {
	mask, err := ParseEventMask(events...)
	if err != nil {
		panic(fmt.Sprintf("api: MustParseEventMask: %v", err))
	}
	return mask
}

// eventNamed returns the event of ValidEvents whose lower-cased name is
// key, or Event_UNKNOWN.
func eventNamed(key string) Event {
	for e := Event(1); e <= upstreamEvents; e++ {
		if strings.ToLower(e.PrettyName()) == key {
			return e
		}
	}
	return Event_UNKNOWN
}

// eventsNamedWith returns the events of ValidEvents whose lower-cased
// names contain part.
func eventsNamedWith(part string) EventMask {
	var mask EventMask
	for e := Event(1); e <= upstreamEvents; e++ {
		if strings.Contains(strings.ToLower(e.PrettyName()), part) {
			mask.Set(e)
		}
	}
	return mask
}
