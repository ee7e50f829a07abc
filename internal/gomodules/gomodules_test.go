package gomodules

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path"
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

// run runs name with args in the repository's root and returns its
// standard output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = root(t)
	// make in the repository's root, not a sub-make of the make test that
	// may be running this test (whose -s, -j or -k it would take); go and
	// make with the repository's go.work, whatever GOWORK says.
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=", "MFLAGS=", "GOWORK=", "GO=go")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// workModules returns go.work's use lines, as written ("." and "./dir").
func workModules(t *testing.T) []string {
	t.Helper()
	var work struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal([]byte(run(t, "go", "work", "edit", "-json", "go.work")), &work); err != nil {
		t.Fatalf("go work edit -json go.work: %v", err)
	}
	var dirs []string
	for _, u := range work.Use {
		dirs = append(dirs, u.DiskPath)
	}
	if len(dirs) == 0 {
		t.Fatal("go.work uses no module")
	}
	return dirs
}

// repoModules returns the directory of every go.mod git knows in the
// repository, in go.work's form ("." and "./dir"), sorted.
func repoModules(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, f := range strings.Fields(run(t, "git", "ls-files", "--", "go.mod", "*/go.mod")) {
		if d := path.Dir(f); d == "." {
			dirs = append(dirs, ".")
		} else {
			dirs = append(dirs, "./"+d)
		}
	}
	slices.Sort(dirs)
	return dirs
}

// makeVars returns the simply expanded variables of make's database
// (make -p): their values, split into words.
func makeVars(t *testing.T) map[string][]string {
	t.Helper()
	// -q runs no recipe; it exits 1 because help is not up to date.
	cmd := exec.Command("make", "--no-print-directory", "-pRrq", "help")
	cmd.Dir = root(t)
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=", "MFLAGS=", "GOWORK=", "GO=go")
	out, _ := cmd.Output()
	vars := map[string][]string{}
	assign := regexp.MustCompile(`^([A-Z0-9_]+) := (.*)$`)
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if m := assign.FindStringSubmatch(sc.Text()); m != nil {
			vars[m[1]] = strings.Fields(m[2])
		}
	}
	if len(vars) == 0 {
		t.Fatalf("make -pRrq help printed no variable:\n%s", out)
	}
	return vars
}

// isE2E reports whether the module in dir is an end-to-end suite, by
// its name: test/*-e2e.
func isE2E(dir string) bool {
	rest, ok := strings.CutPrefix(dir, "./test/")
	return ok && !strings.Contains(rest, "/") && strings.HasSuffix(rest, "-e2e")
}

// lists are the repository's modules: in go.work, its end-to-end suites,
// the rest of it, and the modules outside it.
type lists struct {
	work, e2e, unit, outside []string
}

func modules(t *testing.T) lists {
	t.Helper()
	var l lists
	l.work = workModules(t)
	repo := repoModules(t)
	for _, m := range l.work {
		if !slices.Contains(repo, m) {
			t.Errorf("go.work uses %s, which has no go.mod git knows", m)
		}
		if isE2E(m) {
			l.e2e = append(l.e2e, m)
		} else {
			l.unit = append(l.unit, m)
		}
	}
	for _, m := range repo {
		if !slices.Contains(l.work, m) {
			l.outside = append(l.outside, m)
		}
	}
	return l
}

// TestModules_MakefileLists checks that the Makefile's module lists are
// go.work's and the repository's: GO_MODULES go.work's use lines in their
// order, E2E_MODULES its test/*-e2e, UNIT_MODULES the others, GO_PKGS
// their packages, OUTSIDE_MODULES every other module of the repository.
func TestModules_MakefileLists(t *testing.T) {
	l := modules(t)
	vars := makeVars(t)
	pkgs := []string{}
	for _, m := range l.unit {
		pkgs = append(pkgs, m+"/...")
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"GO_MODULES", l.work},
		{"E2E_MODULES", l.e2e},
		{"UNIT_MODULES", l.unit},
		{"GO_PKGS", pkgs},
		{"OUTSIDE_MODULES", l.outside},
	} {
		got, ok := vars[tc.name]
		if !ok {
			t.Errorf("the Makefile has no %s", tc.name)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("the Makefile's %s is %q, want %q (docs/dev/modules.md)", tc.name, got, tc.want)
		}
	}
	if len(l.e2e) == 0 || len(l.outside) == 0 {
		t.Errorf("%d end-to-end suites and %d modules outside go.work: the lists above cannot tell them apart", len(l.e2e), len(l.outside))
	}
	t.Logf("%d modules in go.work (%d end-to-end suites), %d outside it", len(l.work), len(l.e2e), len(l.outside))
}

// recipeLine is a line of make -n's output that runs go: cmd is "vet",
// "test", "mod" and so on, args the words after it.
type recipeLine struct {
	dir  string // the module it runs in: the cd before it, or "."
	env  string // the variables set before go
	cmd  string
	args []string
}

// goCommands parses make -n targets' output into the go commands it
// runs: "cd DIR && ENV go CMD ARGS" and "(cd DIR && ...) && ..." groups,
// one command for each go in a line.
func goCommands(t *testing.T, targets ...string) []recipeLine {
	t.Helper()
	out := run(t, "make", append([]string{"--no-print-directory", "-n"}, targets...)...)
	var cmds []recipeLine
	goCmd := regexp.MustCompile(`^((?:[A-Z_]+=\S* )*)go (\S+)(.*)$`)
	for _, line := range strings.Split(out, "\n") {
		dir := "."
		for _, part := range strings.Split(line, "&&") {
			part = strings.Trim(strings.TrimSpace(part), "()")
			part = strings.TrimSpace(strings.TrimSuffix(part, "\\"))
			if d, ok := strings.CutPrefix(part, "cd "); ok {
				dir = "./" + strings.TrimPrefix(strings.TrimSpace(d), "./")
				continue
			}
			if m := goCmd.FindStringSubmatch(part); m != nil {
				cmds = append(cmds, recipeLine{dir: dir, env: m[1], cmd: m[2], args: strings.Fields(m[3])})
			}
		}
	}
	if len(cmds) == 0 {
		t.Fatalf("make -n %s runs no go command:\n%s", strings.Join(targets, " "), out)
	}
	return cmds
}

// modulesOf returns the modules a go command covers: those its patterns
// name in the workspace (./dir/...), or the one it runs in alone
// (GOWORK=off, ./...).
func (c recipeLine) modulesOf() []string {
	var mods []string
	for _, a := range c.args {
		p, ok := strings.CutSuffix(a, "/...")
		if !ok || strings.HasPrefix(a, "-") {
			continue
		}
		switch {
		case strings.Contains(c.env, "GOWORK=off") && p == ".":
			mods = append(mods, c.dir)
		case c.dir == ".":
			mods = append(mods, p)
		}
	}
	return mods
}

// TestModules_Targets checks what make does with the modules: make lint
// vets every module (the root module twice, in the workspace and alone),
// make test's go test runs every module but the end-to-end suites, each
// suite's tests run in some recipe of the Makefile, and make mod-download
// downloads every module's requirements.
func TestModules_Targets(t *testing.T) {
	l := modules(t)
	all := append(slices.Clone(l.work), l.outside...)

	vetted := map[string]int{}
	for _, c := range goCommands(t, "lint") {
		if c.cmd == "vet" && !slices.ContainsFunc(c.args, func(a string) bool { return strings.HasPrefix(a, "-tags") }) {
			for _, m := range c.modulesOf() {
				vetted[m]++
			}
		}
	}
	for _, m := range all {
		want := 1
		if m == "." {
			want = 2 // in the workspace, and alone at its own versions
		}
		if vetted[m] != want {
			t.Errorf("make lint vets %s %d times, want %d", m, vetted[m], want)
		}
	}

	tested := map[string]int{}
	for _, c := range goCommands(t, "test") {
		if c.cmd == "test" {
			for _, m := range c.modulesOf() {
				tested[m]++
			}
		}
	}
	for _, m := range all {
		want := 1
		if isE2E(m) {
			want = 0
		}
		if tested[m] != want {
			t.Errorf("make test runs go test of %s %d times, want %d", m, tested[m], want)
		}
	}

	mk, err := os.ReadFile(filepath.Join(root(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range l.e2e {
		suite := regexp.MustCompile(`(?m)^\t.*cd ` + regexp.QuoteMeta(strings.TrimPrefix(m, "./")) + ` && .*\$\(GO\) test `)
		if !suite.Match(mk) {
			t.Errorf("no recipe of the Makefile runs the tests of the end-to-end suite %s (cd %s && ... $(GO) test ...)", m, strings.TrimPrefix(m, "./"))
		}
	}

	downloaded := map[string]int{}
	for _, c := range goCommands(t, "mod-download") {
		if c.cmd == "mod" && slices.Equal(c.args, []string{"download"}) {
			switch {
			case strings.Contains(c.env, "GOWORK=off"):
				downloaded[c.dir]++
			case c.dir == ".":
				for _, m := range l.work {
					downloaded[m]++
				}
			}
		}
	}
	for _, m := range all {
		if downloaded[m] != 1 {
			t.Errorf("make mod-download downloads %s's requirements %d times, want 1", m, downloaded[m])
		}
	}
}

// TestModules_CI checks that .ci/run downloads and tests the modules
// through make (mod-download, test), and names no module itself.
func TestModules_CI(t *testing.T) {
	l := modules(t)
	b, err := os.ReadFile(filepath.Join(root(t), ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	ci := string(b)
	for _, step := range []string{"make mod-download", "make test"} {
		if !regexp.MustCompile(`(?m)^ci_step ` + step + `$`).MatchString(ci) {
			t.Errorf(".ci/run has no line %q", "ci_step "+step)
		}
	}
	if strings.Contains(ci, "go mod download") {
		t.Error(".ci/run runs go mod download itself: make mod-download downloads every module")
	}
	for _, m := range append(slices.Clone(l.work), l.outside...) {
		if m == "." {
			continue
		}
		if regexp.MustCompile(`cd \(?(\./)?` + regexp.QuoteMeta(strings.TrimPrefix(m, "./")) + `\b`).MatchString(ci) {
			t.Errorf(".ci/run changes into the module %s: give the Makefile a target for it", m)
		}
	}
}

// TestModules_Documented checks docs/dev/modules.md's two tables: "In
// go.work" lists go.work's modules and "Outside go.work" the others,
// each module once, by its directory in the first column.
func TestModules_Documented(t *testing.T) {
	l := modules(t)
	f, err := os.Open(filepath.Join(root(t), "docs", "dev", "modules.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string][]string{}
	section := ""
	row := regexp.MustCompile("^\\| `([^`]+)` \\|")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "### "); ok {
			section = h
			continue
		}
		if strings.HasPrefix(line, "## ") {
			section = ""
		}
		if m := row.FindStringSubmatch(line); m != nil && section != "" {
			rows[section] = append(rows[section], m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		section string
		want    []string
	}{
		{"In go.work", l.work},
		{"Outside go.work", l.outside},
	} {
		got := slices.Sorted(slices.Values(rows[tc.section]))
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("docs/dev/modules.md, %q, lists the modules %q, want %q", tc.section, got, want)
		}
	}
}
