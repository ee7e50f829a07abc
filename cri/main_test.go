package cri_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
)

// podnetBinary is nri-podnet, built by TestMain for root runs.
var podnetBinary string

func TestMain(m *testing.M) {
	var dir string
	if os.Geteuid() == 0 {
		var err error
		dir, err = os.MkdirTemp("", "nrinetd-cri-bin-")
		if err != nil {
			panic(err)
		}
		podnetBinary = filepath.Join(dir, "nri-podnet")
		if err := testutil.GoBuild("", dir, nil, "github.com/nrinet/nrinet/cmd/nri-podnet"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}
