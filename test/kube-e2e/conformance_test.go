package kubee2e

import (
	"cmp"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// conformanceEnv selects TestConformance's selection: "full" (make
// conformance) or "ci" (make conformance-ci); unset, the test skips.
const conformanceEnv = "NRINET_CONFORMANCE"

// Further settings of TestConformance (docs/results/conformance.md):
const (
	// networksEnv: the clusters to run, comma-separated, in order
	// (baseline, nrinet, mixed: clusterNetwork); default baseline,nrinet
	// for full, nrinet for ci.
	networksEnv = "NRINET_CONFORMANCE_NETWORKS"
	// outEnv: where each cluster's e2e.test log, JUnit report and TSV go
	// (<out>/<network>/); default _output/conformance of the repository.
	outEnv = "NRINET_CONFORMANCE_OUT"
	// procsEnv: ginkgo's parallel processes; default 4.
	procsEnv = "NRINET_CONFORMANCE_PROCS"
	// focusEnv: a ginkgo focus replacing the selection's, to run a few
	// specs while investigating (the results directory is then not
	// written).
	focusEnv = "NRINET_CONFORMANCE_FOCUS"
	// familyEnv: the clusters' IP families, dual (the default), ipv4 or
	// ipv6 (family_test.go); it chooses the selection (selectionFiles)
	// and where the results go (familyResultsDir).
	familyEnv = "NRINET_CONFORMANCE_FAMILY"
)

// resultsDir holds the committed results of the full selection on
// dual-stack clusters, one TSV per network (docs/results/conformance.md);
// familyResultsDir those of each family.
var resultsDir = filepath.Join("conformance", "results")

// familyResultsDir is where the committed results of a family's full
// selection go: resultsDir for dual-stack clusters, its subdirectory named
// after the family for the others.
func familyResultsDir(f clusterFamily) string {
	if f == familyDual {
		return resultsDir
	}
	return filepath.Join(resultsDir, string(f))
}

// ciFocus is the CI subset (make conformance-ci): the Networking Granular
// Checks, HostPort, one ClusterIP Service spec and one DNS spec; skipFile
// applies as to the full selection (focusFile).
var ciFocus = []specPattern{
	{`\[sig-network\] Networking Granular Checks`, "pod-to-pod, node-to-pod and pod-, node- and endpoint-to-Service, http and udp, both families"},
	{`\[sig-network\] HostPort`, "hostPort mappings"},
	{`\[sig-network\] Services should serve a basic endpoint from pods`, "a ClusterIP Service"},
	{`\[sig-network\] DNS should provide DNS for the cluster `, "cluster DNS through the kube-dns Service"},
}

// TestConformance runs Kubernetes' e2e network specs (e2e.test) against a
// conformance cluster of each network (cluster_test.go): baseline, then
// nrinet, one at a time, each with a control plane of its own; or those
// networksEnv names (make conformance-mixed: mixed); all of the family
// familyEnv names (dual-stack by default). Each cluster's results go to
// <out>/<network>/ (e2e.log, report/junit_01.xml, results.tsv;
// <out>/<family>/<network>/ for a single-stack family) and, for the full
// selection, to the family's results directory (familyResultsDir) as
// <network>.tsv. Then every spec that passed on a network's reference
// (referenceOf: baseline for nrinet, nrinet for mixed) must pass on it;
// without the reference's cluster in the run, its committed TSV is the
// reference for the full selection. The ci selection must pass entirely.
func TestConformance(t *testing.T) {
	mode := os.Getenv(conformanceEnv)
	if mode == "" {
		t.Skipf("set %s=full or ci (make conformance, make conformance-ci)", conformanceEnv)
	}
	skipUnlessEnabled(t)
	family, err := parseClusterFamily(os.Getenv(familyEnv))
	if err != nil {
		t.Fatalf("%s: %v", familyEnv, err)
	}
	focusPath, skipPath, _ := selectionFiles(family)
	sel := selection{name: mode}
	var networks []clusterNetwork
	if sel.skip, err = loadSpecPatterns(skipPath); err != nil {
		t.Fatal(err)
	}
	switch mode {
	case "full":
		networks = []clusterNetwork{networkBaseline, networkNrinet}
		if sel.focus, err = loadSpecPatterns(focusPath); err != nil {
			t.Fatal(err)
		}
	case "ci":
		sel.focus, networks = ciFocus, []clusterNetwork{networkNrinet}
	case conformanceAll:
		t.Skipf("%s=%s runs TestConformanceAll", conformanceEnv, conformanceAll)
	default:
		t.Fatalf("%s=%q: want full or ci", conformanceEnv, mode)
	}
	focused := false
	if f := os.Getenv(focusEnv); f != "" {
		sel.name, sel.focus, focused = "focus", []specPattern{{f, focusEnv}}, true
	}
	networks = envNetworks(networks)
	procs, err := envProcs()
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv(outEnv)
	if out == "" {
		out = filepath.Join("..", "..", "_output", "conformance")
	}
	if out, err = filepath.Abs(out); err != nil {
		t.Fatal(err)
	}
	if family != familyDual {
		out = filepath.Join(out, string(family))
	}
	famResults := familyResultsDir(family)
	tools := findE2ETools(t)
	images := conformanceImages(t)

	commit := ""
	if mode == "full" && !focused {
		commit = famResults
	}
	results := runConformance(t, networks, conformanceRun{
		controllers: conformanceControllers, family: family, images: images, tools: tools, sel: sel, procs: procs,
		out: out, commit: commit, allPass: mode == "ci",
	})

	if mode != "full" {
		return
	}
	for _, network := range networks {
		if res, ok := results[network]; ok {
			compareWithReference(t, network, res, results, famResults, focused)
		}
	}
}

// referenceOf is, for a network, the network of the cluster whose passing
// specs it must pass too: the baseline's for nrinet, the containerd-only
// nrinet cluster's for the mixed one and the one with the DRA driver
// (docs/results/conformance.md).
var referenceOf = map[clusterNetwork]clusterNetwork{
	networkNrinet:   networkBaseline,
	networkMixed:    networkNrinet,
	networkMultinet: networkNrinet,
}

// compareWithReference fails the test for every spec that passed on
// network's reference (referenceOf) and did not pass on network (res):
// the reference's results of this run, else, for the full selection, its
// committed TSV in dir (the family's results directory). A focused run without the
// reference's cluster compares nothing.
func compareWithReference(t *testing.T, network clusterNetwork, res specResults, results map[clusterNetwork]specResults, dir string, focused bool) {
	t.Helper()
	ref, ok := referenceOf[network]
	if !ok {
		return
	}
	want, ok := results[ref]
	if !ok && focused {
		return // nothing to compare a few specs with
	}
	if !ok {
		var err error
		if want, err = loadResults(dir, ref); err != nil {
			t.Logf("no %s results to compare %s with: %v", ref, network, err)
			return
		}
		t.Logf("comparing %s with the committed %s (%s)", network, ref, want.summary())
	}
	regs := regressions(want, res)
	for _, r := range regs {
		t.Errorf("passed on %s, %s on %s: %s", ref, r.state, network, r.spec)
	}
	t.Logf("%s %s; %s %s; %d passed on %s only", ref, want.summary(), network, res.summary(), len(regs), ref)
}

// conformanceRun is how runConformance runs e2e.test on each cluster.
type conformanceRun struct {
	// controllers are kube-controller-manager's besides controllers.
	controllers []string
	family      clusterFamily
	images      []imageArchive
	tools       e2eTools
	sel         selection
	procs       int
	// out is where each cluster's results go (<out>/<network>/); commit,
	// if not "", the directory of the committed <network>.tsv files.
	out, commit string
	// allPass: every selected spec must pass (the ci selection).
	allPass bool
}

// runConformance runs r on a cluster of each network, one at a time, each
// with a control plane of its own, and returns their results.
func runConformance(t *testing.T, networks []clusterNetwork, r conformanceRun) map[clusterNetwork]specResults {
	t.Helper()
	results := map[clusterNetwork]specResults{}
	for _, network := range networks {
		t.Run(string(network), func(t *testing.T) {
			start := time.Now()
			dir := filepath.Join(r.out, string(network))
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			cp := startControlPlaneWith(t, controlPlaneOptions{extraControllers: r.controllers, family: r.family})
			c := startCluster(t, cp, network, r.images)
			up := time.Since(start)
			res := c.runE2E(r.tools, r.sel, r.procs, dir)
			results[network] = res
			files := []string{filepath.Join(dir, "results.tsv")}
			if r.commit != "" {
				files = append(files, filepath.Join(r.commit, string(network)+".tsv"))
			}
			for _, f := range files {
				if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := writeResultsFile(f, res); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("cluster %s (%s): %s; cluster up in %v, all of it %v (before the cleanup)", network, cmp.Or(r.family, familyDual), res.summary(),
				up.Round(time.Second), time.Since(start).Round(time.Second))
			if r.allPass {
				for _, name := range slices.Sorted(maps.Keys(res)) {
					if res[name] == specFailed {
						t.Errorf("cluster %s: failed: %s", network, name)
					}
				}
			}
		})
	}
	return results
}

// loadResults reads network's committed results, dir/<network>.tsv.
func loadResults(dir string, network clusterNetwork) (specResults, error) {
	f, err := os.Open(filepath.Join(dir, string(network)+".tsv"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readTSV(f)
}

// conformanceImages writes the images every node of a conformance cluster
// imports (writeE2EImages: those the selected specs run, the pause image
// under its published name, CoreDNS) and returns their archives.
func conformanceImages(t testing.TB) []imageArchive {
	t.Helper()
	prepareStage3(t) // the static pause binary
	return writeConformanceImages(t, kubeImageBins(env.kubeBin, env.kubeSrc, filepath.Join(env.dir, "pause")), e2eImages)
}

// writeConformanceImages writes images of bins into the suite's
// directory of e2e images and returns their archives, CoreDNS's among
// them.
func writeConformanceImages(t testing.TB, bins e2eImageBins, images []e2eImage) []imageArchive {
	t.Helper()
	dir := filepath.Join(env.dir, "e2e-images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	archives, err := writeImages(dir, bins, images)
	if err != nil {
		t.Fatalf("the e2e images: %v", err)
	}
	if archives[corednsImage] == "" {
		t.Fatalf("the e2e images have no %s", corednsImage)
	}
	var out []imageArchive
	for _, ref := range slices.Sorted(maps.Keys(archives)) {
		out = append(out, imageArchive{archives[ref], ref})
	}
	return out
}

// TestCIFocus_SelectsFromTheSelection checks, without a cluster, that
// every pattern of the CI subset selects at least one spec of the full
// selection (selectedFile): the subset is part of what make conformance
// compares, and a pattern that no longer matches (a spec renamed in a new
// e2e.test) would silently shrink it.
func TestCIFocus_SelectsFromTheSelection(t *testing.T) {
	b, err := os.ReadFile(selectedFile)
	if err != nil {
		t.Fatal(err)
	}
	var specs []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			name, _, _ := strings.Cut(l, "\t")
			specs = append(specs, name)
		}
	}
	for _, p := range ciFocus {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			t.Errorf("%q: %v", p.Pattern, err)
			continue
		}
		n := 0
		for _, s := range specs {
			if re.MatchString(s) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("CI pattern %q selects no spec of %s", p.Pattern, selectedFile)
		}
	}
}
