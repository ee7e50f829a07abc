package cni_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
)

// nriCNIBinary is the nri-cni executable TestMain built, "" when not
// running as root (the tests that launch it skip then).
var nriCNIBinary string

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == recorderType {
		os.Exit(recorderMain()) // run by libcni as a CNI plugin
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// The recorder is this test binary, built with -race by make test:
	// the race runtime would sleep 1 s (GORACE atexit_sleep_ms) at the end
	// of each of its runs. The processes this one starts inherit this;
	// the user's GORACE, after it, still wins.
	os.Setenv("GORACE", strings.TrimSpace("atexit_sleep_ms=0 "+os.Getenv("GORACE")))
	if os.Geteuid() == 0 {
		dir, err := os.MkdirTemp("", "nrcni-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		nriCNIBinary = filepath.Join(dir, "nri-cni")
		if err := testutil.GoBuild("", dir, nil, "github.com/nrinet/nrinet/cmd/nri-cni"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}
