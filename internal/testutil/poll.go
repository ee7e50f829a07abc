package testutil

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// abortError marks an error of a Poll condition that ends the polling.
type abortError struct{ err error }

func (e abortError) Error() string { return e.err.Error() }
func (e abortError) Unwrap() error { return e.err }

// Abort wraps err so that Poll returns it at once instead of trying again.
func Abort(err error) error { return abortError{err} }

// Poll calls cond every interval until it returns nil, or an error made
// with Abort, or patience has passed. It returns nil, the aborting error
// (unwrapped), or cond's last error wrapped with how long it waited.
func Poll(patience, interval time.Duration, cond func() error) error {
	deadline := time.Now().Add(patience)
	for {
		err := cond()
		var abort abortError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &abort):
			return abort.err
		case time.Now().After(deadline):
			return fmt.Errorf("still after %v: %w", patience, err)
		}
		time.Sleep(interval)
	}
}

// Until turns a condition into one for Poll: nil once cond holds, else an
// error saying what is awaited.
func Until(what string, cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errors.New("waiting for " + what)
	}
}

// WaitFor polls cond every 10 ms until it holds, failing the test after
// patience.
func WaitFor(t testing.TB, what string, patience time.Duration, cond func() bool) {
	t.Helper()
	if err := Poll(patience, 10*time.Millisecond, Until(what, cond)); err != nil {
		t.Fatalf("timed out: %v", err)
	}
}
