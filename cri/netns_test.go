package cri_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/cri"
	"github.com/nrinet/nrinet/internal/testutil"
)

// leaveFile creates the empty file a crash between unmounting a network
// namespace and deleting its file leaves behind, and removes it (by exact
// name) when the test ends.
func leaveFile(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
}

// netnsNames lists the namespaces `ip netns list` shows.
func netnsNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, l := range strings.Split(testutil.Run(t, "ip", "netns", "list"), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

// TestRestart_RemovesStaleNetNSFiles: a crash between unmounting a
// sandbox's network namespace and deleting its file leaves an empty file
// in /run/netns. The next start removes such files of its own sandboxes
// (known to the store, or marked as being created) and no other.
func TestRestart_RemovesStaleNetNSFiles(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	e := newEnv(t, envConfig{})
	ready := e.run(podConfig(1, false))
	stopped := e.run(podConfig(2, false))
	e.stopPod(stopped)
	creating := "nrinet-" + randHex(6) // RunPodSandbox was creating it
	foreign := "nrinet-" + randHex(6)  // not this nrinetd's
	e.stop()

	// READY, and its namespace was unmounted but the file stayed.
	if err := unix.Unmount(netnsPath(ready), unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	// Stopped, and the crash came between unmount and delete.
	leaveFile(t, netnsPath(stopped))
	// Being created: the marker and the file, not in the store.
	leaveFile(t, filepath.Join(cri.NetNSDir, creating))
	if err := os.MkdirAll(filepath.Join(e.dir, "creating"), 0o700); err != nil {
		t.Fatal(err)
	}
	leaveFile(t, filepath.Join(e.dir, "creating", creating))
	// Another instance's: no marker, not in the store.
	leaveFile(t, filepath.Join(cri.NetNSDir, foreign))

	e.start()

	for _, tc := range []struct {
		name, path string
		want       bool
	}{
		{"ready sandbox whose namespace was unmounted", netnsPath(ready), false},
		{"stopped sandbox", netnsPath(stopped), false},
		{"sandbox being created", filepath.Join(cri.NetNSDir, creating), false},
		{"creation marker", filepath.Join(e.dir, "creating", creating), false},
		{"another instance's namespace", filepath.Join(cri.NetNSDir, foreign), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := exists(tc.path); got != tc.want {
				t.Errorf("%s exists: %v, want %v\n%s", tc.path, got, tc.want, e.logs)
			}
		})
	}
	if st := e.status(ready, false).GetStatus(); st.GetState() != criapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandbox whose namespace was unmounted: %v, want NOTREADY", st.GetState())
	}
	e.removePod(ready)
	e.removePod(stopped)
	for _, n := range netnsNames(t) {
		for _, mine := range []string{"nrinet-" + ready[:12], "nrinet-" + stopped[:12], creating} {
			if n == mine {
				t.Errorf("ip netns list still shows %s", n)
			}
		}
	}
}
