package kubee2e

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The selection of make conformance-all (TestConformanceAll,
// docs/results/conformance.md): every [Conformance] spec of every SIG in
// e2e.test v1.37.2, but those allSkipFile skips, each for a reason that
// holds for both clusters. The format is focusFile's and skipFile's;
// allSelectedFile lists what they select (TestE2ESelection_All), and the
// results of the last full run are in allResultsDir, one TSV per network.
const (
	allFocusFile    = "conformance/all/focus.txt"
	allSkipFile     = "conformance/all/skip.txt"
	allSelectedFile = "conformance/all/selected-specs.txt"
	allResultsDir   = "conformance/all/results"
)

// conformanceAll is the value of conformanceEnv that runs
// TestConformanceAll (TestConformance leaves it to it).
const conformanceAll = "all"

// TestConformanceAll runs every [Conformance] spec of e2e.test but those
// of allSkipFile (the selection of allFocusFile) against a conformance
// cluster of each network, baseline then nrinet, as TestConformance runs
// the network specs, with the images of e2eImages and
// conformanceAllImages. It runs only with NRINET_CONFORMANCE=all (make
// conformance-all) and takes the other settings of TestConformance
// (networksEnv, outEnv, default _output/conformance-all, procsEnv and
// focusEnv). Each cluster's results go to <out>/<network>/ and, unless
// focusEnv narrows the selection, to allResultsDir/<network>.tsv; then
// every spec that passed on baseline must pass on nrinet; the cluster a
// run leaves out (networksEnv) is compared through its committed TSV.
func TestConformanceAll(t *testing.T) {
	if os.Getenv(conformanceEnv) != conformanceAll {
		t.Skipf("set %s=%s (make conformance-all)", conformanceEnv, conformanceAll)
	}
	skipUnlessEnabled(t)
	sel := selection{name: conformanceAll}
	var err error
	if sel.focus, err = loadSpecPatterns(allFocusFile); err != nil {
		t.Fatal(err)
	}
	if sel.skip, err = loadSpecPatterns(allSkipFile); err != nil {
		t.Fatal(err)
	}
	focused := false
	if f := os.Getenv(focusEnv); f != "" {
		sel.name, sel.focus, focused = "focus", []specPattern{{f, focusEnv}}, true
	}
	networks := envNetworks([]clusterNetwork{networkBaseline, networkNrinet})
	procs, err := envProcs()
	if err != nil {
		t.Fatal(err)
	}
	out, err := filepath.Abs(cmp.Or(os.Getenv(outEnv), filepath.Join("..", "..", "_output", "conformance-all")))
	if err != nil {
		t.Fatal(err)
	}
	commit := ""
	if !focused {
		commit = allResultsDir
	}
	results := runConformance(t, networks, conformanceRun{
		controllers: conformanceAllControllers, images: conformanceAllImageArchives(t), tools: findE2ETools(t), sel: sel, procs: procs, out: out, commit: commit,
	})

	// The two clusters may run in different runs (networksEnv): a run of
	// the baseline alone compares the committed nrinet results with it.
	res, ok := results[networkNrinet]
	if !ok && !focused && len(results) > 0 {
		if res, err = loadResults(allResultsDir, networkNrinet); err != nil {
			t.Logf("no %s results to compare with: %v", networkNrinet, err)
			return
		}
		t.Logf("comparing the committed %s results (%s)", networkNrinet, res.summary())
		ok = true
	}
	if ok {
		compareWithReference(t, networkNrinet, res, results, allResultsDir, focused)
	}
}

// envNetworks returns the clusters networksEnv names, in order, or def.
func envNetworks(def []clusterNetwork) []clusterNetwork {
	s := os.Getenv(networksEnv)
	if s == "" {
		return def
	}
	var networks []clusterNetwork
	for _, n := range strings.Split(s, ",") {
		networks = append(networks, clusterNetwork(strings.TrimSpace(n)))
	}
	return networks
}

// envProcs returns ginkgo's parallel processes: procsEnv, default 4.
func envProcs() (int, error) {
	s := os.Getenv(procsEnv)
	if s == "" {
		return 4, nil
	}
	procs, err := strconv.Atoi(s)
	if err != nil || procs < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive number", procsEnv, s)
	}
	return procs, nil
}

// conformanceAllImageArchives writes the images every node of a
// conformance-all cluster imports: e2eImages (conformanceImages) and
// conformanceAllImages, whose programs it builds first
// (buildConformanceAllBins).
func conformanceAllImageArchives(t testing.TB) []imageArchive {
	t.Helper()
	prepareStage3(t) // the static pause binary
	bins := kubeImageBins(env.kubeBin, env.kubeSrc, filepath.Join(env.dir, "pause"))
	bins, err := buildConformanceAllBins(bins, env.kubeBin, filepath.Join(env.dir, "conformance-all-bin"))
	if err != nil {
		t.Fatal(err)
	}
	return writeConformanceImages(t, bins, slices.Concat(e2eImages, conformanceAllImages))
}
