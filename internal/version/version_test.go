package version

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
)

func TestResolve(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		linked string
		info   *debug.BuildInfo
		want   string
	}{
		{"linker wins", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, "v1.2.3"},
		{"linker without build info", "v1.2.3", nil, "v1.2.3"},
		{"no build info", "", nil, Devel},
		{"module version", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101120000-0123456789ab+dirty"},
			Settings: settings("vcs.revision", rev)}, "v0.0.0-20260101120000-0123456789ab+dirty"},
		{"revision", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs.revision", rev, "vcs.modified", "false")}, "0123456789ab"},
		{"dirty revision", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs.modified", "true", "vcs.revision", rev)}, "0123456789ab+dirty"},
		{"short revision", "", &debug.BuildInfo{Settings: settings("vcs.revision", "abc")}, "abc"},
		{"nothing", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, Devel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolve(tc.linked, tc.info); got != tc.want {
				t.Errorf("resolve(%q, ...) = %q, want %q", tc.linked, got, tc.want)
			}
		})
	}
}

// moduleRoot is the repository root, two levels up.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// commands lists the directories of cmd/: every binary of the module.
func commands(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		// cmd/internal holds the commands' shared wiring, not a command.
		if e.IsDir() && e.Name() != "internal" {
			names = append(names, e.Name())
		}
	}
	if len(names) < 4 {
		t.Fatalf("cmd/ has %v, want nrinetd, nri-podnet, nri-cni, nrinet-demo at least", names)
	}
	return names
}

// build runs go build with args in root; outDir gets the binaries.
func build(t *testing.T, root string, args ...string) {
	t.Helper()
	cmd := testutil.GoBuildCmd(root, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// runVersion runs bin -version and returns its standard output; it must
// exit 0.
func runVersion(t *testing.T, bin string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "-version")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s -version: %v\nstderr: %s", bin, err, stderr.String())
	}
	return stdout.String()
}

// TestCommands builds every command in cmd/ with the version set by the
// linker and checks that -version prints "<name> <version>" and exits 0;
// then builds one without it and checks the version from the build
// information.
func TestCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the commands")
	}
	root := moduleRoot(t)
	names := commands(t, root)
	const want = "v9.8.7-test.1"

	t.Run("ldflags", func(t *testing.T) {
		out := t.TempDir()
		build(t, root, "-ldflags", "-X github.com/nrinet/nrinet/internal/version.version="+want, "-o", out+"/", "./cmd/...")
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				if got := runVersion(t, filepath.Join(out, name)); got != name+" "+want+"\n" {
					t.Errorf("%s -version printed %q, want %q", name, got, name+" "+want+"\n")
				}
			})
		}
	})

	// Without -X, one command is enough: they all call String.
	const name = "nri-cni"
	t.Run("no vcs", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), name)
		build(t, root, "-buildvcs=false", "-o", bin, "./cmd/"+name)
		if got := runVersion(t, bin); got != name+" "+Devel+"\n" {
			t.Errorf("%s -version printed %q, want %q", name, got, name+" "+Devel+"\n")
		}
	})
	t.Run("build info", func(t *testing.T) {
		// With VCS stamping where go can (a checkout whose .git is a
		// directory, and git installed); a git worktree, whose .git is a
		// file, gets none.
		bin := filepath.Join(t.TempDir(), name)
		build(t, root, "-buildvcs=auto", "-o", bin, "./cmd/"+name)
		want := fromGoVersion(t, bin)
		if got := runVersion(t, bin); got != name+" "+want+"\n" {
			t.Errorf("%s -version printed %q, want %q (from go version -m)", name, got, name+" "+want+"\n")
		}
	})
}

// fromGoVersion reads the build information of bin as go version -m
// prints it, and returns the version String should give.
func fromGoVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var mod, rev, modified string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		// The main module: the cmd module (docs/dev/modules.md), whatever
		// its path.
		case len(f) >= 3 && f[0] == "mod":
			mod = f[2]
		case len(f) == 2 && f[0] == "build":
			if v, ok := strings.CutPrefix(f[1], "vcs.revision="); ok {
				rev = v
			}
			if v, ok := strings.CutPrefix(f[1], "vcs.modified="); ok {
				modified = v
			}
		}
	}
	t.Logf("go version -m: module version %q, vcs.revision %q, vcs.modified %q", mod, rev, modified)
	switch {
	case mod != "" && mod != "(devel)":
		return mod
	case rev != "":
		if modified == "true" {
			return rev[:12] + "+dirty"
		}
		return rev[:12]
	}
	return Devel
}
