package hostdeps

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakeTest_NoPing runs the repository's own make test on a PATH that
// has everything make test needs but ping, and no apt-get: it stops
// before any build, with one line naming the missing package.
func TestMakeTest_NoPing(t *testing.T) {
	bin := t.TempDir()
	// What make, the Makefile's hack/version.sh and go run need, and
	// every command of Test but ping.
	cmds := []string{"go", "bash", "sh", "dirname", "cat", "gofmt"}
	for _, n := range Test.Needs {
		if n.Cmd != "" && n.Cmd != "ping" {
			cmds = append(cmds, n.Cmd)
		}
	}
	for _, c := range cmds {
		p, err := exec.LookPath(c)
		if err != nil {
			t.Skipf("%s not on PATH: %v", c, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, c)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "test")
	cmd.Path = filepath.Join(bin, "make")
	// Not a sub-make of the make test that may be running this test.
	cmd.Env = append(os.Environ(), "PATH="+bin, "MAKEFLAGS=", "MAKELEVEL=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make test passed without ping:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var said []string
	for _, l := range lines {
		if !makeError.MatchString(l) && !strings.HasPrefix(l, "go: downloading") {
			said = append(said, l)
		}
	}
	want := "make test: missing ping (package iputils-ping, needed to ping between pods' network namespaces): install iputils-ping with your package manager and run again"
	if len(said) != 1 || said[0] != want {
		t.Errorf("make test without ping said:\n%s\nwant the one line:\n%s", out, want)
	}
}

// makeError is make's own line about a failed recipe.
var makeError = regexp.MustCompile(`^make(\[\d+\])?: \*\*\*`)
