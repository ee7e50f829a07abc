package kubee2e

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// kubeletHostLock is the lock file every kubelet node of this suite (and of
// other checkouts' runs of it on the machine) holds while its kubelet may
// run: the kubelet uses host-wide paths whatever its --root-dir
// (kubeletHostDirs), so two kubelets at once would share them.
const kubeletHostLock = "/run/nrinet-kube-e2e-kubelet.lock"

// foreignKubeletPatience bounds how long lockKubeletHost waits for a
// kubelet it did not start (one of a run that does not take the lock) to
// exit.
const foreignKubeletPatience = 5 * time.Minute

// lockKubeletHost takes kubeletHostLock (flock, waiting for another
// holder) until the test's cleanups end, and then waits until no kubelet
// process runs on the host (a run of a checkout without the lock may still
// run one; it is logged and, after foreignKubeletPatience, ignored). Call
// it before anything the node's cleanups undo, so that the lock is
// released last.
func lockKubeletHost(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(kubeletHostLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("flock %s: %v", kubeletHostLock, err)
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
	if d := time.Since(start); d > time.Second {
		t.Logf("waited %v for %s (another run's kubelet)", d.Round(time.Millisecond), kubeletHostLock)
	}
	logged := false
	err = testutil.Poll(foreignKubeletPatience, time.Second, func() error {
		pids := kubeletPIDs()
		if len(pids) == 0 {
			return nil
		}
		if !logged {
			t.Logf("waiting for kubelet processes %v of another run to exit", pids)
			logged = true
		}
		return fmt.Errorf("kubelet processes %v still run", pids)
	})
	if err != nil {
		t.Logf("%v; starting ours anyway", err)
	}
}

// kubeletPIDs lists the processes whose executable is named kubelet.
func kubeletPIDs() []int {
	var pids []int
	for _, p := range processesNamed("kubelet") {
		pids = append(pids, p.pid)
	}
	return pids
}
