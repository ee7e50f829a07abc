package testutil

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// RuncWrapperName is the name under which a test binary acts as the OCI
// runtime CRI-O runs (RuncWrapperMain): runc, with each OCI spec's
// process.oomScoreAdj raised to this process's own score where it is
// lower. CRI-O gives every infra container -998, which needs
// CAP_SYS_RESOURCE; where a suite runs without it (as in a container),
// runc would fail. containerd has restrict_oom_score_adj for this; CRI-O
// has no such option, so the suites that run CRI-O (test/crio-e2e, and
// test/kube-e2e's CRI-O node) put this in front of runc: a symlink of
// this name to the test binary, whose TestMain calls RuncWrapperMain when
// it runs under this name. Nothing else of the spec changes.
const RuncWrapperName = "runc-restrict-oom-score-adj"

// RuncWrapperMain clamps the spec of a create or run (--bundle) and of an
// exec (--process), then executes runc with the same arguments.
func RuncWrapperMain(args []string) int {
	runc, err := exec.LookPath("runc")
	if err != nil {
		fmt.Fprintln(os.Stderr, RuncWrapperName+":", err)
		return 1
	}
	own, err := ownOOMScoreAdj()
	if err != nil {
		fmt.Fprintln(os.Stderr, RuncWrapperName+":", err)
		return 1
	}
	for i, a := range args {
		var path, key string
		switch {
		case (a == "--bundle" || a == "-b") && i+1 < len(args):
			path, key = filepath.Join(args[i+1], "config.json"), "process"
		case strings.HasPrefix(a, "--bundle="):
			path, key = filepath.Join(strings.TrimPrefix(a, "--bundle="), "config.json"), "process"
		case (a == "--process" || a == "-p") && i+1 < len(args):
			path = args[i+1]
		default:
			continue
		}
		if err := clampOOMScoreAdj(path, key, own); err != nil {
			fmt.Fprintln(os.Stderr, RuncWrapperName+":", err)
			return 1
		}
	}
	err = syscall.Exec(runc, append([]string{"runc"}, args...), os.Environ())
	fmt.Fprintln(os.Stderr, RuncWrapperName+": exec runc:", err)
	return 1
}

// ownOOMScoreAdj returns this process's oom_score_adj.
func ownOOMScoreAdj() (int, error) {
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// clampOOMScoreAdj raises oomScoreAdj of the JSON file at path (of its
// object key, or of the top level if key is empty) to at least min.
func clampOOMScoreAdj(path, key string, min int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	proc := doc
	if key != "" {
		p, ok := doc[key].(map[string]any)
		if !ok {
			return nil
		}
		proc = p
	}
	v, ok := proc["oomScoreAdj"].(float64)
	if !ok || int(v) >= min {
		return nil
	}
	proc["oomScoreAdj"] = min
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}
