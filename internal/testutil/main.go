package testutil

import (
	"fmt"
	"os"
	"testing"
)

// GatedMain is the TestMain of a suite that needs root and an opt-in
// environment variable (gate), such as the end-to-end suites: without
// both every test runs without setup (and skips itself). Otherwise setup
// prepares what the tests share in a temporary directory, the tests run,
// teardown (if not nil) runs and the directory is removed. A setup error
// is printed with name and fails the run. It returns the exit code for
// os.Exit.
func GatedMain(m *testing.M, gate, name string, setup func(dir string) error, teardown func()) int {
	if os.Geteuid() != 0 || os.Getenv(gate) == "" {
		return m.Run() // every test skips
	}
	dir, err := os.MkdirTemp("", "nrinet-"+name+"-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	defer os.RemoveAll(dir)
	code := 1
	if err := setup(dir); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
	} else {
		code = m.Run()
	}
	if teardown != nil {
		teardown()
	}
	return code
}
