package api_test

import (
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
)

func TestContainerTimes(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 30, 0, 123456789, time.UTC)
	for _, tc := range []struct {
		name string
		in   *api.Container
		want [3]time.Time // created, started, finished
	}{
		{"nil", nil, [3]time.Time{}},
		{"unset", &api.Container{}, [3]time.Time{}},
		{
			"set",
			&api.Container{CreatedAt: at.UnixNano(), StartedAt: at.Add(time.Second).UnixNano(), FinishedAt: at.Add(time.Minute).UnixNano()},
			[3]time.Time{at, at.Add(time.Second), at.Add(time.Minute)},
		},
		{"created only", &api.Container{CreatedAt: at.UnixNano()}, [3]time.Time{at, {}, {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := [3]time.Time{tc.in.GetCreatedAtTime(), tc.in.GetStartedAtTime(), tc.in.GetFinishedAtTime()}
			for i, name := range []string{"created", "started", "finished"} {
				if !got[i].Equal(tc.want[i]) || got[i].IsZero() != tc.want[i].IsZero() {
					t.Errorf("%s: got %v, want %v", name, got[i], tc.want[i])
				}
			}
		})
	}
}
