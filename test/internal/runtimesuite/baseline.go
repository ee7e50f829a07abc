package runtimesuite

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// Baseline is a baseline file: the outcome of every top-level test of each
// suite on the stock runtime.
type Baseline struct {
	// Version is the runtime's version the outcomes were recorded with.
	Version string `json:"version"`
	// Recorded describes the run: runtime, Go version, platform, user,
	// cgroup mode.
	Recorded string `json:"recorded"`
	// Packages maps a suite's package to its tests' results.
	Packages map[string]map[string]Result `json:"packages"`
}

// ReadBaseline reads the baseline file and checks that it was recorded
// with version.
func ReadBaseline(file, version string) (*Baseline, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if b.Version != version {
		return nil, fmt.Errorf("%s was recorded with version %s, this is %s: record it again with -update on the stock runtime",
			file, b.Version, version)
	}
	return &b, nil
}

// WriteBaseline records the outcomes of a run on the stock runtime (what,
// such as "stock containerd (NRINET_CONTAINERD_NRI=upstream)") into file.
func WriteBaseline(t *testing.T, file, what string, b Build, recorded map[string]map[string]Result) {
	t.Helper()
	goVersion, err := GoCmd(t.Context(), b.Src, "env", "GOVERSION").Output()
	if err != nil {
		t.Fatalf("go env GOVERSION: %v", err)
	}
	cgroup := "cgroup v1"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		cgroup = "cgroup v2"
	}
	base := Baseline{
		Version: b.Version,
		Recorded: fmt.Sprintf("%s, %s, %s/%s, root, %s",
			what, strings.TrimSpace(string(goVersion)), runtime.GOOS, runtime.GOARCH, cgroup),
		Packages: recorded,
	}
	data, err := json.MarshalIndent(base, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", file)
}
