package api

import "time"

// GetCreatedAtTime returns when the container was created, from CreatedAt
// (Unix nanoseconds), or the zero time.Time if CreatedAt is 0 or x is nil.
//
// Upstream NRI v0.12.5 has the same method but adds the nanoseconds to
// the zero time.Time (January 1 of year 1), so its result is not the
// creation time; this one is.
func (x *Container) GetCreatedAtTime() time.Time { return unixNanoTime(x.GetCreatedAt()) }

// GetStartedAtTime returns when the container was started, from StartedAt
// (Unix nanoseconds), or the zero time.Time if StartedAt is 0 or x is nil.
// See GetCreatedAtTime for how this differs from upstream NRI.
func (x *Container) GetStartedAtTime() time.Time { return unixNanoTime(x.GetStartedAt()) }

// GetFinishedAtTime returns when the container finished, from FinishedAt
// (Unix nanoseconds), or the zero time.Time if FinishedAt is 0 or x is
// nil. See GetCreatedAtTime for how this differs from upstream NRI.
func (x *Container) GetFinishedAtTime() time.Time { return unixNanoTime(x.GetFinishedAt()) }

// unixNanoTime turns a timestamp in Unix nanoseconds into a time.Time, 0
// into the zero time.Time ("not set").
func unixNanoTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
