package testutil

import (
	"os"
	"testing"
)

// SkipUnlessRoot skips t when not running as root, except in CI (CI=true),
// where running without root is a failure.
func SkipUnlessRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this test needs root, and CI runs as root")
	}
	t.Skip("needs root")
}
