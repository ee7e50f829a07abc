package cri_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
		out, err := exec.Command("go", "build", "-o", podnetBinary, "github.com/nrinet/nrinet/cmd/nri-podnet").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building nri-podnet: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}
