// Package syncwatch checks what a late-joining NRI plugin learned against
// the pods and containers that were created around its joins: every one
// whose creation had ended before a session's end must have reached that
// session once, in its Synchronize request or as a RunPodSandbox or
// CreateContainer event. A StartContainer event alone does not count: a
// plugin that learns of a container only when it starts has missed its
// creation (critest's NRI specs count the same way). cmd/nri-sync-observer
// records the sessions; the suite records the creations (crictl runp or
// create, from start to return).
package syncwatch

import (
	"fmt"
	"slices"
)

// Event types a session records.
const (
	RunPodSandbox   = "RunPodSandbox"
	CreateContainer = "CreateContainer"
	StartContainer  = "StartContainer"
)

// Session is what one connection of the plugin learned. Times are Unix
// nanoseconds of the host's clock.
type Session struct {
	// N numbers the sessions of one plugin process from 0.
	N int `json:"n"`
	// Connect is when the plugin connected, Sync when its Synchronize
	// request arrived, Synced when it answered it, End the session's end:
	// a container created before End must have reached the session.
	Connect int64 `json:"connect"`
	Sync    int64 `json:"sync,omitempty"`
	Synced  int64 `json:"synced,omitempty"`
	End     int64 `json:"end,omitempty"`
	// Pods and Containers are the IDs of the Synchronize request.
	Pods       []string `json:"pods,omitempty"`
	Containers []string `json:"containers,omitempty"`
	// Events are the lifecycle events received, in order.
	Events []Event `json:"events,omitempty"`
	// Error says why the session ended early, if it did.
	Error string `json:"error,omitempty"`
}

// Event is one lifecycle event a session received.
type Event struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	At   int64  `json:"at"`
}

// Creation is a pod or container the test created: its ID, and when the
// request (RunPodSandbox, CreateContainer) was sent and when it returned.
type Creation struct {
	ID         string
	Pod        bool
	Start, End int64
}

// Problem is a pod or container that a session should have learned
// about once and did not.
type Problem struct {
	Session int
	ID      string
	// Twice is false for a lost pod or container (in neither the
	// Synchronize request nor a RunPodSandbox or CreateContainer event),
	// true for one the session learned twice (in Synchronize and as an
	// event, or in two events).
	Twice bool
	// Started says that a lost container's StartContainer event arrived.
	Started bool
	// Created is the container's creation, relative to the session's
	// Synchronize request (negative: the create returned before it).
	Created Creation
}

func (p Problem) String() string {
	what := "lost"
	switch {
	case p.Twice:
		what = "seen twice"
	case p.Started:
		what = "lost (only its StartContainer arrived)"
	}
	kind := "container"
	if p.Created.Pod {
		kind = "pod"
	}
	return fmt.Sprintf("session %d: %s %s %s (created from %+.3fs to %+.3fs of Synchronize)",
		p.Session, kind, p.ID, what, float64(p.Created.Start)/1e9, float64(p.Created.End)/1e9)
}

// Check returns, for every complete session (one with an End), the pods
// and containers of created whose creation returned before the session's
// end and that the session did not learn about, and those it learned
// about twice. Sessions that ended early (no End) are left out; completed
// counts the others.
func Check(sessions []Session, created []Creation) (problems []Problem, completed int) {
	for _, s := range sessions {
		if s.End == 0 {
			continue
		}
		completed++
		inSync := map[string]bool{}
		for _, id := range append(slices.Clone(s.Pods), s.Containers...) {
			inSync[id] = true
		}
		creates := map[string]int{} // RunPodSandbox and CreateContainer
		started := map[string]bool{}
		for _, ev := range s.Events {
			switch ev.Type {
			case RunPodSandbox, CreateContainer:
				creates[ev.ID]++
			case StartContainer:
				started[ev.ID] = true
			}
		}
		for _, c := range created {
			rel := Creation{ID: c.ID, Pod: c.Pod, Start: c.Start - s.Sync, End: c.End - s.Sync}
			switch {
			case c.End < s.End && !inSync[c.ID] && creates[c.ID] == 0:
				problems = append(problems, Problem{Session: s.N, ID: c.ID, Started: started[c.ID], Created: rel})
			case creates[c.ID] > 1 || (creates[c.ID] == 1 && inSync[c.ID]):
				problems = append(problems, Problem{Session: s.N, ID: c.ID, Twice: true, Created: rel})
			}
		}
	}
	slices.SortStableFunc(problems, func(a, b Problem) int { return a.Session - b.Session })
	return problems, completed
}
