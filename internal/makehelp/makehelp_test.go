package makehelp

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository's root.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// makeCmd is make in the repository's root, not a sub-make of the make
// test that may be running this test (whose -s, -j or -k it would take).
func makeCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", root(t)}, args...)...)
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=", "MFLAGS=")
	return cmd
}

// database returns what make knows of the Makefile (make -p): the
// targets of its rules, special ones (.PHONY) and files that are no
// target aside, and the default goal.
func database(t *testing.T) (targets []string, defaultGoal string) {
	t.Helper()
	// -q runs no recipe; it exits 1 because help is not up to date.
	out, _ := makeCmd(t, "-pRrq", "help").Output()
	rule := regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*):(?:[^=:]|$)`)
	prev := ""
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		if g, ok := strings.CutPrefix(line, ".DEFAULT_GOAL := "); ok {
			defaultGoal = g
		}
		if m := rule.FindStringSubmatch(line); m != nil && prev != "# Not a target:" {
			targets = append(targets, m[1])
		}
		prev = line
	}
	if len(targets) == 0 {
		t.Fatalf("make -pRrq help printed no target:\n%s", out)
	}
	return targets, defaultGoal
}

// helpLine is a line of make help's list: two spaces, the target, the
// text.
var helpLine = regexp.MustCompile(`^  ([A-Za-z0-9][A-Za-z0-9_.-]*)  +(\S.*)$`)

// TestHelp_EveryTarget runs make -s help and checks that it lists every
// target make knows once, with a text, under a group, and nothing else;
// and that make alone still runs test.
func TestHelp_EveryTarget(t *testing.T) {
	targets, goal := database(t)
	if goal != "test" {
		t.Errorf("make's default goal is %q, want test", goal)
	}
	out, err := makeCmd(t, "-s", "help").CombinedOutput()
	if err != nil {
		t.Fatalf("make -s help: %v\n%s", err, out)
	}
	listed := map[string]int{}
	group := ""
	for i, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		switch m := helpLine.FindStringSubmatch(line); {
		case i == 0 || line == "":
		case m != nil:
			if group == "" {
				t.Errorf("make help lists %s before any group", m[1])
			}
			listed[m[1]]++
		case !strings.HasPrefix(line, " "):
			group = line
		default:
			t.Errorf("make help line %d: %q is neither a group nor a target with its text", i+1, line)
		}
	}
	for _, target := range targets {
		if listed[target] != 1 {
			t.Errorf("make help lists %s %d times: give its rule a \"## [group] text\" line right above it", target, listed[target])
		}
	}
	for target := range listed {
		if !slices.Contains(targets, target) {
			t.Errorf("make help lists %s, which make does not know", target)
		}
	}
	t.Logf("%d targets", len(targets))
}

// TestHelp_Malformed runs hack/make-help.awk over Makefiles whose
// descriptions are wrong: each fails, saying where, and prints no list.
func TestHelp_Malformed(t *testing.T) {
	script := filepath.Join(root(t), "hack", "make-help.awk")
	for _, tc := range []struct {
		name, makefile, want string
	}{
		{"no rule below", "## [test] a\n\na:\n", "line 2: the line below"},
		{"two targets", "## [test] a\na b: c\n", "line 2: the line below"},
		{"an assignment", "## [test] a\na := b\n", "line 2: the line below"},
		{"two descriptions", "## [test] a\n## [test] a\na:\n", "line 2: the line below"},
		{"no group", "## a text\na:\n", "line 1: want"},
		{"unknown group", "## [tests] a\na:\n", "line 1: no group tests"},
		{"no text", "## [test]\na:\n", "line 1: want"},
		{"at the end", "a:\n## [test] a\n", "a \"## [group]\" line ends the file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mk := filepath.Join(t.TempDir(), "Makefile")
			if err := os.WriteFile(mk, []byte(tc.makefile), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("awk", "-f", script, mk)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err == nil || len(out) != 0 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("awk: %v, stdout %q, stderr %q; want a failure saying %q", err, out, stderr.String(), tc.want)
			}
		})
	}
}

// TestHelp_Groups runs hack/make-help.awk over a small Makefile: groups
// in their fixed order, targets in the Makefile's, undescribed ones left
// out, the texts as written but for the versions file's $(KEY)s.
func TestHelp_Groups(t *testing.T) {
	dir := t.TempDir()
	mk, versions := filepath.Join(dir, "Makefile"), filepath.Join(dir, "versions.env")
	text := "X ?= 1\n## [dev] this list\nhelp:\n\t@echo\n# a comment\n## [test] the tests: all\ntest: unit\nunit:\n## [build] the commands of $(A_VERSION), into $(OUT)\nbuild:\n"
	if err := os.WriteFile(mk, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(versions, []byte("# versions\nA_VERSION=v1.2.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("awk", "-f", filepath.Join(root(t), "hack", "make-help.awk"), versions, mk).CombinedOutput()
	if err != nil {
		t.Fatalf("awk: %v\n%s", err, out)
	}
	want := "make <target> (make alone runs test); variables as make VAR=value:\n" +
		"\nBuild and install\n  build  the commands of v1.2.3, into $(OUT)\n" +
		"\nTest suites\n  test   the tests: all\n" +
		"\nDevelopment\n  help   this list\n"
	if string(out) != want {
		t.Errorf("make help printed:\n%s\nwant:\n%s", out, want)
	}
}
