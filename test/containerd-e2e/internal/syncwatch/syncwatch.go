// Package syncwatch checks what a late-joining NRI plugin learned against
// the containers that were created around its joins: every container whose
// creation had ended before a session's end must have reached that
// session once, in its Synchronize request or as a CreateContainer event.
// A StartContainer event alone does not count: a plugin that learns of a
// container only when it starts has missed its creation (critest's NRI
// specs count the same way). cmd/nri-sync-observer records the sessions;
// the suite records the creations (crictl create, from start to return).
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

// Creation is a container the test created: its ID, and when the create
// request was sent and when it returned.
type Creation struct {
	ID         string
	Start, End int64
}

// Problem is a container that a session should have learned about once
// and did not.
type Problem struct {
	Session int
	ID      string
	// Twice is false for a lost container (in neither the Synchronize
	// request nor a CreateContainer event), true for one the session
	// learned twice (in Synchronize and as CreateContainer, or in two
	// CreateContainer events).
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
	return fmt.Sprintf("session %d: container %s %s (create from %+.3fs to %+.3fs of Synchronize)",
		p.Session, p.ID, what, float64(p.Created.Start)/1e9, float64(p.Created.End)/1e9)
}

// Check returns, for every complete session (one with an End), the
// containers of created whose create returned before the session's end
// and that the session did not learn about, and those it learned about
// twice. Sessions that ended early (no End) are left out; Completed
// counts the others.
func Check(sessions []Session, created []Creation) (problems []Problem, completed int) {
	for _, s := range sessions {
		if s.End == 0 {
			continue
		}
		completed++
		inSync := map[string]bool{}
		for _, id := range s.Containers {
			inSync[id] = true
		}
		creates := map[string]int{}
		started := map[string]bool{}
		for _, ev := range s.Events {
			switch ev.Type {
			case CreateContainer:
				creates[ev.ID]++
			case StartContainer:
				started[ev.ID] = true
			}
		}
		for _, c := range created {
			rel := Creation{ID: c.ID, Start: c.Start - s.Sync, End: c.End - s.Sync}
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
