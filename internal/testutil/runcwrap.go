package testutil

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// RuncWrapperName is the name under which a test binary acts as the OCI
// runtime CRI-O runs (RuncWrapperMain): runc, with two changes to each
// OCI spec for what CRI-O assumes of a host and a test host may lack,
// where containerd has an option and CRI-O none:
//
//   - process.oomScoreAdj raised to this process's own score where it is
//     lower (containerd: restrict_oom_score_adj). CRI-O gives every infra
//     container -998, which needs CAP_SYS_RESOURCE; where a suite runs
//     without it (as in a container), runc would fail.
//   - linux.resources.hugepageLimits removed when runc has no hugetlb
//     cgroup to put them in (hugetlbUsable; containerd:
//     disable_hugetlb_controller, on by default). CRI-O passes the
//     kubelet's hugepage limits on whenever the kernel lists the
//     controller (/proc/cgroups), and runc then fails the container. This
//     machine's cgroups are hybrid: every controller on cgroup v1 but
//     hugetlb, which is on the v2 hierarchy at /sys/fs/cgroup/unified,
//     where runc's v1 manager does not look.
//
// The suites that run CRI-O (test/crio-e2e, and test/kube-e2e's CRI-O
// node) put a symlink of this name to the test binary in front of runc,
// and the test binary's TestMain calls RuncWrapperMain when it runs
// under this name. Nothing else of the spec changes.
const RuncWrapperName = "runc-restricted"

// RuncWrapperMain adjusts the spec of a create or run (--bundle) and of
// an exec (--process), then executes runc with the same arguments.
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
		var path string
		bundle := false
		switch {
		case (a == "--bundle" || a == "-b") && i+1 < len(args):
			path, bundle = filepath.Join(args[i+1], "config.json"), true
		case strings.HasPrefix(a, "--bundle="):
			path, bundle = filepath.Join(strings.TrimPrefix(a, "--bundle="), "config.json"), true
		case (a == "--process" || a == "-p") && i+1 < len(args):
			path = args[i+1]
		default:
			continue
		}
		if err := adjustSpec(path, bundle, own, bundle && !hugetlbUsable()); err != nil {
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

// hugetlbUsable reports whether runc can apply hugetlb limits: a cgroup
// v1 hierarchy with the hugetlb controller is mounted, or the host is on
// cgroup v2 alone (cgroup2 at /sys/fs/cgroup) with hugetlb among its
// controllers. A cgroup2 mount elsewhere (/sys/fs/cgroup/unified of a
// hybrid host) does not count: runc then manages cgroup v1 only.
func hugetlbUsable() bool {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return true // as runc would find it: leave the spec alone
	}
	return hugetlbUsableIn(string(mountinfo), os.ReadFile)
}

// hugetlbUsableIn is hugetlbUsable on a mountinfo text, reading a cgroup2
// mount's files with readFile.
func hugetlbUsableIn(mountinfo string, readFile func(string) ([]byte, error)) bool {
	for _, l := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		switch g[0] {
		case "cgroup":
			if slices.Contains(strings.Split(g[2], ","), "hugetlb") {
				return true
			}
		case "cgroup2":
			if f[4] != "/sys/fs/cgroup" {
				continue
			}
			b, err := readFile(filepath.Join(f[4], "cgroup.controllers"))
			if err == nil && slices.Contains(strings.Fields(string(b)), "hugetlb") {
				return true
			}
		}
	}
	return false
}

// adjustSpec changes the JSON file at path, a bundle's config.json
// (bundle) or an exec's process: it raises oomScoreAdj of the process
// (the object "process" of a bundle's spec) to at least min and, with
// dropHugetlb, removes linux.resources.hugepageLimits. The file is
// rewritten only if something changed.
func adjustSpec(path string, bundle bool, min int, dropHugetlb bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	changed := false
	proc := doc
	if bundle {
		proc, _ = doc["process"].(map[string]any)
	}
	if v, ok := proc["oomScoreAdj"].(float64); ok && int(v) < min {
		proc["oomScoreAdj"] = min
		changed = true
	}
	if linux, ok := doc["linux"].(map[string]any); ok && dropHugetlb && bundle {
		if res, ok := linux["resources"].(map[string]any); ok {
			if _, ok := res["hugepageLimits"]; ok {
				delete(res, "hugepageLimits")
				changed = true
			}
		}
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}
