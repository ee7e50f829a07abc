package kubee2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// checkLeaks fails the test for anything of a run left on the host once
// its cleanups ran. Everything the suite makes on the host carries the
// run's token in its name (network namespaces, links) or lives under its
// directory dir (files, and so the command lines of its processes and the
// mount points of its mounts). Pod network namespaces (nrinet-<sandbox>)
// are checked by the node that made them (node.cleanup). Stage 4 checks
// nri-podnet's bridge, routes and nftables table in the node's namespace
// before it goes.
func checkLeaks(t testing.TB, token, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		if strings.Contains(e.Name(), token) {
			t.Errorf("left behind: network namespace %s", e.Name())
		}
	}
	if out, err := os.ReadFile("/proc/net/dev"); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if name, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && strings.Contains(name, token) {
				t.Errorf("left behind: link %s", name)
			}
		}
	}
	procs, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			t.Errorf("left behind: process %d: %s", pid, bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte{' '}))
		}
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(mounts), "\n") {
			if strings.Contains(l, dir) {
				t.Errorf("left behind: mount %s", l)
			}
		}
	}
	// The kubelet's links to its containers' logs name the pod's namespace,
	// which carries the token.
	logs, _ := os.ReadDir("/var/log/containers")
	for _, e := range logs {
		if strings.Contains(e.Name(), token) {
			t.Errorf("left behind: /var/log/containers/%s", e.Name())
		}
	}
	// The kubelets' cgroup roots, /nrke-<token>-<node> in every hierarchy.
	for _, m := range cgroupMounts(t) {
		if entries, _ := os.ReadDir(m); entries != nil {
			for _, e := range entries {
				if strings.Contains(e.Name(), token) {
					t.Errorf("left behind: cgroup %s", filepath.Join(m, e.Name()))
				}
			}
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("left behind: directory %s", dir)
	}
}
