package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/imagebuild"
	"github.com/nrinet/nrinet/internal/testutil"
)

// TestContainerdImport imports the images into a private containerd, as
// docs/deploy.md tells to do on each node, and checks that containerd
// lists both references of each, complete and unpacked. It runs as root
// with NRINET_CONTAINERD_BIN naming a directory holding containerd and ctr
// (hack/containerd.sh prints it), and is skipped otherwise.
func TestContainerdImport(t *testing.T) {
	bin := os.Getenv("NRINET_CONTAINERD_BIN")
	if bin == "" {
		t.Skip("NRINET_CONTAINERD_BIN is not set (hack/containerd.sh prints it)")
	}
	if os.Geteuid() != 0 {
		t.Skip("containerd needs root")
	}
	version := "import-" + fmt.Sprint(time.Now().UnixNano())
	out, _ := buildImages(t, version)
	ctr := startContainerd(t, bin)
	for _, c := range components {
		archive := filepath.Join(out, c+".tar")
		if o, err := ctr("images", "import", archive); err != nil {
			t.Fatalf("ctr images import %s: %v\n%s", archive, err, o)
		}
	}
	check, err := ctr("images", "check", "--snapshotter", "native")
	if err != nil {
		t.Fatalf("ctr images check: %v\n%s", err, check)
	}
	for _, c := range components {
		for _, ref := range []string{imagebuild.Ref(c, version), imagebuild.Ref(c, imagebuild.LatestTag)} {
			var line string
			for l := range strings.Lines(check) {
				if f := strings.Fields(l); len(f) > 0 && f[0] == ref {
					line = l
				}
			}
			// REF TYPE DIGEST STATUS SIZE UNPACKED: "complete (2/2)" and
			// unpacked "true".
			if !strings.Contains(line, "complete") || !strings.HasSuffix(strings.TrimSpace(line), "true") {
				t.Errorf("ctr images check does not show %s complete and unpacked:\n%s", ref, check)
			}
		}
	}
}

// startContainerd starts containerd from bin with its root, state and
// socket in a temporary directory, without CRI and NRI (whose default
// socket other tests use), stops it at cleanup, and returns a function
// running ctr against it in the k8s.io namespace.
func startContainerd(t *testing.T, bin string) func(args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "containerd.sock")
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `version = 3
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images", "io.containerd.nri.v1.nri"]

[grpc]
  address = %q

[ttrpc]
  address = %q

# The native snapshotter unpacks into plain directories under root: no
# mounts to clean up.
[[plugins."io.containerd.transfer.v1.local".unpack_config]]
  platform = "linux/%s"
  snapshotter = "native"
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, sock+".ttrpc", runtime.GOARCH), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cmd := exec.Command(filepath.Join(bin, "containerd"), "--config", config)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("containerd's log:\n%s", log.String())
		}
	})
	ctr := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(bin, "ctr"), append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
		return string(out), err
	}
	err := testutil.Poll(30*time.Second, 50*time.Millisecond, func() error {
		out, err := ctr("version")
		if err == nil {
			return nil
		}
		select {
		case err := <-exited:
			exited <- err
			return testutil.Abort(fmt.Errorf("containerd exited: %v", err))
		default:
		}
		return fmt.Errorf("containerd is not serving: %v\n%s", err, out)
	})
	if err != nil {
		t.Fatal(err)
	}
	return ctr
}
