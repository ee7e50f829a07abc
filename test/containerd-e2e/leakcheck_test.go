package containerde2e

import (
	"slices"
	"testing"
)

// TestLeakCheck checks the leak check itself: containerd killed with
// SIGKILL while a pod runs cleans nothing up, so the check must find a
// leak of every kind (the shims and the pod's processes, the rootfs and
// shm mounts, the network namespace, the host veth, the shim socket, the
// CNI result caches, the IPAM entry, the pod's cgroups) and remove them all
// by name, after which it finds nothing. In integration mode the pod has
// no cgroup parent (its cgroups are /k8s.io/<ID>), and the check knows its
// IDs only from containerd's log, as for containerd's integration tests.
func TestLeakCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts options
	}{
		{"suite", options{nri: "upstream", network: networkCNI}},
		{"integration", options{nri: "upstream", network: networkCNI, integration: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startContainerd(t, tc.opts)
			c.runPod("a", "a")
			if c.keepalive != nil {
				c.keepalive.kill()
				c.keepalive = nil
				c.seen.mu.Lock()
				c.seen.ids = nil // what containerd logged must do
				c.seen.mu.Unlock()
				c.seen.add(loggedIDs(c.log.String())...)
			} else {
				c.cmd.Process.Kill()
				<-c.exited
				c.cmd = nil
			}

			leaks := c.scope().leaks(c.before, takeSnapshot())
			var kinds []string
			for _, l := range leaks {
				t.Logf("found %s", l)
				if !slices.Contains(kinds, l.kind) {
					kinds = append(kinds, l.kind)
				}
			}
			for _, want := range []string{kindProcess, kindMount, kindNetNS, kindLink, kindShimSock, kindCNIResult, kindIPAM, kindCgroup} {
				if !slices.Contains(kinds, want) {
					t.Errorf("no %s found after containerd was killed with a pod running", want)
				}
			}
			for _, l := range leaks {
				if err := l.remove(); err != nil {
					t.Errorf("removing %s: %v", l, err)
				}
			}
			if again := c.scope().leaks(c.before, takeSnapshot()); len(again) != 0 {
				t.Errorf("after removing them, the check still finds %v", again)
			}
			// The cleanup checks once more, and removes the bridge, the
			// cgroup parent and the instance directory's own mount.
		})
	}
}
