package crio_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/test/internal/runtimesuite"
)

var update = flag.Bool("update", false, "record testdata/baseline.json from this run (stock CRI-O only)")

// buildTags are hack/crio.sh's: CRI-O's without the optional C libraries.
// The tests add "test", as CRI-O's make testunit does (its *_inject.go
// files give the tests their hooks).
const buildTags = "containers_image_ostree_stub exclude_graphdriver_btrfs btrfs_noversion containers_image_openpgp"

// packages are the packages of CRI-O v1.36.3 that import
// github.com/containerd/nri (found with `grep -rl containerd/nri
// --include=*.go`), with tests or, without, compiled.
var packages = []runtimesuite.Package{
	{Path: "server", Why: "nri-api.go: CRI-O's NRI domain (adjustments, updates, evictions, LinuxResources.ToOCI); " +
		"its Ginkgo suite runs UpdateContainerResources with NRI enabled", Ginkgo: true},
	{Path: "internal/nri", Why: "imports nri pkg/adaptation and pkg/api: CRI-O's NRI service and its pod and container views; " +
		"stock CRI-O has no tests here, nrinet's patches add the pod network calls' (NetworkDomain, port mappings and DNS)"},
	{Path: "internal/lib/sandbox", Why: "the sandbox, where nrinet's patches keep the pod's network mode and NRI network record", Ginkgo: true},
	{Path: "pkg/config", Why: "CRI-O's configuration, where nrinet's patches add network_mode and required_network_plugins", Ginkgo: true},
	{Path: "internal/config/nri", Why: "imports nri pkg/adaptation: the [crio.nri] configuration; no tests, only compiled", CompileOnly: true},
	{Path: "test/nri", Why: "imports nri pkg/api and pkg/stub (NRI plugins on upstream's stub); " +
		"its tests need a running CRI-O, so it is only compiled", CompileOnly: true},
}

func TestCrioNRIPackages(t *testing.T) {
	if os.Getenv("NRINET_CRIO_TEST") == "" && !*update {
		t.Skip("set NRINET_CRIO_TEST=1 (make crio-test) to build CRI-O and run its NRI unit tests")
	}
	testutil.SkipUnlessRoot(t)
	runtimesuite.Suite{
		Runtime:  "CRI-O",
		Script:   filepath.Join("..", "..", "hack", "crio.sh"),
		Prefix:   "NRINET_CRIO",
		NRIVar:   "NRINET_CRIO_NRI",
		Baseline: filepath.Join("testdata", "baseline.json"),
		Patches:  filepath.Join("..", "..", "hack", "crio-patches"),
		GoMod:    runtimesuite.AdoptionRules("CRI-O"),
		Flags:    []string{"-trimpath", "-count=1", "-timeout=15m", "-tags", "test " + buildTags},
		Packages: packages,
		Update:   *update,
	}.Run(t)
}
