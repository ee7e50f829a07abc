package syncwatch_test

import (
	"testing"

	"github.com/nrinet/nrinet/test/containerd-e2e/internal/syncwatch"
)

func TestCheck(t *testing.T) {
	// One session: Synchronize at 100, end at 200.
	s := syncwatch.Session{N: 3, Connect: 90, Sync: 100, Synced: 110, End: 200,
		Pods:       []string{"pod-before"},
		Containers: []string{"before", "both"},
		Events: []syncwatch.Event{
			{Type: syncwatch.CreateContainer, ID: "during"},
			{Type: syncwatch.RunPodSandbox, ID: "pod-during"},
			{Type: syncwatch.StartContainer, ID: "before"},
			{Type: syncwatch.StartContainer, ID: "started-only"},
			{Type: syncwatch.CreateContainer, ID: "both"},
			{Type: syncwatch.CreateContainer, ID: "double"},
			{Type: syncwatch.CreateContainer, ID: "double"},
		}}
	early := syncwatch.Session{N: 4, Connect: 300, Error: "closed"} // no End: not checked
	created := []syncwatch.Creation{
		{ID: "before", Start: 10, End: 20},
		{ID: "during", Start: 95, End: 150},
		{ID: "started-only", Start: 95, End: 150},
		{ID: "lost", Start: 120, End: 180},
		{ID: "late", Start: 190, End: 250}, // returned after the end: not required
		{ID: "both", Start: 50, End: 105},
		{ID: "double", Start: 150, End: 160},
		{ID: "pod-before", Pod: true, Start: 1, End: 2},
		{ID: "pod-during", Pod: true, Start: 99, End: 130},
		{ID: "pod-lost", Pod: true, Start: 101, End: 140},
	}
	got, completed := syncwatch.Check([]syncwatch.Session{s, early}, created)
	if completed != 1 {
		t.Errorf("completed = %d, want 1", completed)
	}
	want := []syncwatch.Problem{
		{Session: 3, ID: "started-only", Started: true, Created: syncwatch.Creation{ID: "started-only", Start: -5, End: 50}},
		{Session: 3, ID: "lost", Created: syncwatch.Creation{ID: "lost", Start: 20, End: 80}},
		{Session: 3, ID: "both", Twice: true, Created: syncwatch.Creation{ID: "both", Start: -50, End: 5}},
		{Session: 3, ID: "double", Twice: true, Created: syncwatch.Creation{ID: "double", Start: 50, End: 60}},
		{Session: 3, ID: "pod-lost", Created: syncwatch.Creation{ID: "pod-lost", Pod: true, Start: 1, End: 40}},
	}
	if len(got) != len(want) {
		t.Fatalf("Check = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("problem %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
