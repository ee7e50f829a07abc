// Package reconcile runs nri-podnet's controllers: one sync function,
// which reads the whole wanted state and writes it, run by one goroutine
// whenever something changed (Runner.Poke), never twice at once, pokes
// that arrive during a sync coalesced into one more, a failed sync
// retried with exponential backoff, and optionally again every resync
// period without a poke.
//
// It is client-go's rate-limited work queue with a single key, the loop
// of a level-triggered controller: the queue coalesces and delays, its
// per-item exponential failure limiter is the backoff. The NetworkPolicy
// controller (package policies) and the Node watcher (package kube) both
// run on it.
package reconcile
