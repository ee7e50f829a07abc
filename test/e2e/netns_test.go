package e2e

import (
	"errors"
	"path/filepath"
	"slices"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// sandboxNamespaces lists nrinetd's sandbox network namespaces on the
// host (/run/netns/nrinet-*).
func sandboxNamespaces() []string {
	names, _ := filepath.Glob("/run/netns/nrinet-*")
	return names
}

// foreignNamespaceGrace bounds how long leakedNamespaces waits for a new
// namespace to go: the longest other packages' tests keep a pod.
const foreignNamespaceGrace = 30 * time.Second

// leakedNamespaces returns the sandbox network namespaces there now that
// were not in before and stay. Other packages' tests, run in parallel
// (make unit runs four packages at a time), add and remove their own
// under the same prefix: one that goes within foreignNamespaceGrace is
// theirs, and a namespace this test's failed pod leaked stays.
func leakedNamespaces(before []string) []string {
	var out []string
	testutil.Poll(foreignNamespaceGrace, 100*time.Millisecond, func() error {
		out = out[:0]
		for _, n := range sandboxNamespaces() {
			if !slices.Contains(before, n) {
				out = append(out, n)
			}
		}
		if len(out) > 0 {
			return errors.New("new namespaces")
		}
		return nil
	})
	return out
}
