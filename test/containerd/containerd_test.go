package containerd_test

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/test/internal/runtimesuite"
)

var update = flag.Bool("update", false, "record testdata/baseline.json from this run (stock containerd only)")

const baselineFile = "testdata/baseline.json"

// suites are the packages of containerd v2.4.2 that import
// github.com/containerd/nri (found with `grep -rl containerd/nri
// --include=*.go`, vendor/ left out), and those that import containerd's
// own NRI packages (internal/nri, internal/cri/nri). plugins/nri, which
// imports internal/nri too, has no tests; the containerd binary links it.
var packages = []runtimesuite.Package{
	{Path: "internal/nri", Why: "imports nri pkg/adaptation and pkg/api: containerd's NRI service, its domains, metrics and deprecations"},
	{Path: "internal/cri/nri", Why: "imports nri pkg/api: the CRI side of NRI (pod and container views, api.FromOCI*)"},
	{Path: "internal/cri/server/podsandbox", Why: "imports the nri v0.1 client and types/v1 (nri.New, InvokeWithSandbox)", TestArgs: []string{"-test.root"}},
	{Path: "internal/cri/server", Why: "imports internal/nri and internal/cri/nri: the CRI service that calls NRI"},
	{Path: "plugins/cri", Why: "imports internal/nri: the CRI plugin's NRI wiring and configuration"},
	{Path: "internal/cri/config", Why: "the CRI configuration, where nrinet's patches add network_mode"},
	{Path: "internal/cri/store/sandbox", Why: "the sandbox store, where nrinet's patches keep the pod's NRI network"},
	{Path: "integration", Why: "imports nri pkg/api and pkg/stub (NRI plugins written on upstream's stub); " +
		"its tests need a running containerd, so it is only compiled", CompileOnly: true},
}

func TestContainerdNRIPackages(t *testing.T) {
	if os.Getenv("NRINET_CONTAINERD_TEST") == "" && !*update {
		t.Skip("set NRINET_CONTAINERD_TEST=1 (make containerd-test) to build containerd and run its NRI unit tests")
	}
	testutil.SkipUnlessRoot(t)
	// As containerd's own make test and make root-test run them (with
	// -race on amd64), in vendor mode.
	flags := []string{"-mod=vendor", "-trimpath", "-count=1", "-timeout=10m"}
	if runtime.GOARCH == "amd64" {
		flags = append(flags, "-race")
	}
	runtimesuite.Suite{
		Runtime:  "containerd",
		Script:   filepath.Join("..", "..", "hack", "containerd.sh"),
		Prefix:   "NRINET_CONTAINERD",
		NRIVar:   "NRINET_CONTAINERD_NRI",
		Baseline: baselineFile,
		Patches:  filepath.Join("..", "..", "hack", "containerd-patches"),
		GoMod:    runtimesuite.AdoptionRules("containerd"),
		Flags:    flags,
		Packages: packages,
		Update:   *update,
	}.Run(t)
}

func TestAddedTests(t *testing.T) {
	added, err := runtimesuite.AddedTests(filepath.Join("..", "..", "hack", "containerd-patches"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"TestValidateNetworkMode", "TestStoreUpdateNetwork", "TestNRINetworkIPs"} {
		if !added[name] {
			t.Errorf("%s, which the patches add, was not found (found %v)", name, added)
		}
	}
}
