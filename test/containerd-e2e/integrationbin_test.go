package containerde2e

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// integrationBinaryName is the test binary's name in a build's bin
// directory, as containerd's Makefile names it (bin/cri-integration.test).
const integrationBinaryName = "cri-integration.test"

// integrationBuildFlags are go test -c's flags for the binary: as
// containerd's Makefile builds it (`go test -c ./integration`, no tags),
// plus what hack/containerd.sh adds to every build of the source tree
// (its vendor/ directory; -trimpath, which shares the Go build cache
// between cache directories).
var integrationBuildFlags = []string{"-mod=vendor", "-trimpath"}

// integrationBinary returns containerd's CRI integration test binary for
// a build, built from the build's source tree the first time:
// <cache dir>/bin/cri-integration.test. Its stamp,
// <cache dir>/integration-built, holds the cache directory's own "built"
// stamp (hack/containerd.sh: version, mode, replacements, script, Go and
// flags) and the test's build flags, so the binary is rebuilt exactly when
// containerd is. It builds under the cache directory's lock, the one
// hack/containerd.sh takes, so that no other checkout rewrites the tree
// meanwhile.
func integrationBinary(b *build) (bin string, built bool, err error) {
	dir := filepath.Dir(b.bin)
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", false, err
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", false, fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	containerdStamp, err := os.ReadFile(filepath.Join(dir, "built"))
	if err != nil {
		return "", false, fmt.Errorf("containerd's build stamp: %w (run hack/containerd.sh)", err)
	}
	stamp := fmt.Sprintf("%stest %s ./integration\n", containerdStamp, strings.Join(integrationBuildFlags, " "))
	bin = filepath.Join(b.bin, integrationBinaryName)
	stampFile := filepath.Join(dir, "integration-built")
	if old, err := os.ReadFile(stampFile); err == nil && string(old) == stamp {
		if _, err := os.Stat(bin); err == nil {
			return bin, false, nil
		}
	}
	os.Remove(stampFile)
	args := append(append([]string{"test", "-c"}, integrationBuildFlags...), "-o", bin+".tmp", "./integration")
	cmd := exec.Command(cmp.Or(os.Getenv("GO"), "go"), args...)
	cmd.Dir = b.src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", false, fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), b.src, err, out)
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", false, err
	}
	if err := os.WriteFile(stampFile, []byte(stamp), 0o644); err != nil {
		return "", false, err
	}
	return bin, true, nil
}

// integrationTestFiles are the files of containerd's integration package
// whose tests run: the NRI tests, which run NRI plugins written on
// upstream's pkg/stub against the live containerd.
var integrationTestFiles = []string{"integration/nri_test.go", "integration/nri_linux_test.go"}

var testFuncRE = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\) \{`)

// integrationTests lists the tests of integrationTestFiles in a source
// tree, sorted.
func integrationTests(src string) ([]string, error) {
	var names []string
	for _, f := range integrationTestFiles {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return nil, err
		}
		for _, m := range testFuncRE.FindAllStringSubmatch(string(b), -1) {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no tests in %v under %s", integrationTestFiles, src)
	}
	slices.Sort(names)
	return names, nil
}

// runPattern is go test's -run pattern that selects exactly names.
func runPattern(names []string) string {
	return "^(" + strings.Join(names, "|") + ")$"
}

// since rounds the time since start for a log line.
func since(start time.Time) time.Duration { return time.Since(start).Round(100 * time.Millisecond) }
