package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nrinet/nrinet/internal/gobin"
	"github.com/nrinet/nrinet/internal/pins"
	"github.com/nrinet/nrinet/internal/testutil"
)

// Binaries built by TestMain (root runs only).
var (
	nrinetdBin string
	podnetBin  string
	cniBin     string
	crictlBin  string
)

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run()) // every test skips
	}
	dir, err := os.MkdirTemp("", "nrinetd-e2e-bin-")
	if err != nil {
		panic(err)
	}
	code := 1
	if err := setup(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func setup(dir string) error {
	nrinetdBin, podnetBin, cniBin = filepath.Join(dir, "nrinetd"), filepath.Join(dir, "nri-podnet"), filepath.Join(dir, "nri-cni")
	if err := testutil.GoBuild("", dir, nil, "github.com/nrinet/nrinet/cmd/nrinetd", "github.com/nrinet/nrinet/cmd/nri-podnet", "github.com/nrinet/nrinet/cmd/nri-cni"); err != nil {
		return err
	}
	var err error
	crictlBin, err = installCrictl()
	return err
}

// installCrictl builds crictl once into a directory shared by all test
// runs and returns its path; NRINET_CRICTL overrides it.
func installCrictl() (string, error) {
	if p := os.Getenv("NRINET_CRICTL"); p != "" {
		return p, nil
	}
	return gobin.Install(gobin.Dir("nrinet-crictl", pins.CRITools), "sigs.k8s.io/cri-tools/cmd/crictl", pins.CRITools)
}
