package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Environment of the test; see the package documentation.
const (
	enableEnv  = "NRINET_CHAOS"
	workersEnv = "NRINET_CHAOS_WORKERS"
	seedEnv    = "NRINET_CHAOS_SEED"
	raceEnv    = "NRINET_CHAOS_RACE"
	keepEnv    = "NRINET_CHAOS_KEEP"

	// innerEnv marks the child that runs the tests in its own mount
	// namespace.
	innerEnv = "NRINET_CHAOS_INNER"
	// taggerEnv makes the test binary run as the 20-chaostag plugin,
	// connecting to the NRI socket it names.
	taggerEnv = "NRINET_CHAOS_TAGGER"
)

// netnsDir is where nrinetd mounts pod network namespaces; the inner
// process mounts a tmpfs of its own there.
const netnsDir = "/run/netns"

// Binaries built by TestMain for TestChaos.
var (
	nrinetdBin string
	podnetBin  string
)

func TestMain(m *testing.M) {
	if sock := os.Getenv(taggerEnv); sock != "" {
		os.Exit(taggerMain(sock))
	}
	if os.Getenv(enableEnv) == "" || os.Geteuid() != 0 {
		os.Exit(m.Run()) // TestChaos skips
	}
	if os.Getenv(innerEnv) == "" {
		os.Exit(reexecInMountNS())
	}
	if err := enterSandbox(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "nrinet-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	code := 1
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// reexecInMountNS runs this test binary again, with the same arguments,
// in a new mount namespace whose mounts are private (the Go runtime makes
// them so when it unshares CLONE_NEWNS), and returns its exit code.
func reexecInMountNS() int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), innerEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "chaos: running the tests in a mount namespace:", err)
		return 1
	}
}

// enterSandbox mounts a tmpfs on /run/netns in this process's own mount
// namespace and makes the process a child subreaper.
func enterSandbox() error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("nrinet-chaos", netnsDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w", netnsDir, err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming a child subreaper: %w", err)
	}
	return nil
}

// build builds nrinetd and nri-podnet into dir, with -race if
// NRINET_CHAOS_RACE=1, and finds crictl.
func build(dir string) error {
	nrinetdBin, podnetBin = filepath.Join(dir, "nrinetd"), filepath.Join(dir, "nri-podnet")
	args := []string{"build"}
	if os.Getenv(raceEnv) == "1" {
		args = append(args, "-race")
	}
	for _, b := range []struct{ bin, pkg string }{
		{nrinetdBin, "github.com/nrinet/nrinet/cmd/nrinetd"},
		{podnetBin, "github.com/nrinet/nrinet/cmd/nri-podnet"},
	} {
		start := time.Now()
		out, err := exec.Command("go", append(args, "-o", b.bin, b.pkg)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("building %s: %v\n%s", b.pkg, err, out)
		}
		fmt.Fprintf(os.Stderr, "chaos: built %s in %v\n", filepath.Base(b.bin), time.Since(start).Round(time.Millisecond))
	}
	p, err := installCrictl()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: without crictl, statuses over gRPC only: %v\n", err)
		return nil
	}
	crictlBin = p
	return nil
}
