package envdoc_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/envdoc"
)

// The tests use the prefix EX_, so that the repository's own scan
// (TestEnvironmentDoc) does not take their samples for variables.
const prefix = "EX_"

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"shell", `x=${EX_A:-1} "$EX_B_C" EX_A`, []string{"EX_A", "EX_B_C", "EX_A"}},
		{"braces", "prints EX_K_{BIN,VERSION}=... and EX_{X}", []string{"EX_K_BIN", "EX_K_VERSION", "EX_X"}},
		{"built from a prefix", `"EX_E2E_" + name, "EX_"`, []string{"EX_E2E_"}},
		{"not at a word's start", "NEX_A xEX_B EX_lower", nil},
		{"stops at other characters", "EX_A=1 EX_B.go EX_Cx", []string{"EX_A", "EX_B", "EX_C"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := envdoc.Names(tc.text, prefix); !slices.Equal(got, tc.want) {
				t.Errorf("Names(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	text := `
a=${EX_A:-compat}
b=${EX_B:-$repo/x} c=${EX_C:-} d=${EX_D:-${EX_E:-/var}}
EX_F ?= 10000
EX_G ?= $(X)
	EX_H ?= 1
cache := cmp.Or(os.Getenv("EX_I"), "/var/cache/nrinet")
`
	want := []envdoc.Default{{Name: "EX_A", Value: "compat"}, {Name: "EX_E", Value: "/var"}, {Name: "EX_F", Value: "10000"}, {Name: "EX_I", Value: "/var/cache/nrinet"}}
	if got := envdoc.Defaults(text, prefix); !slices.Equal(got, want) {
		t.Errorf("Defaults = %+v, want %+v", got, want)
	}
}

const table = "# Environment\n\nProse names EX_A and EX_P_X.\n\n" +
	"| variable | read by | default | meaning |\n" +
	"|---|---|---|---|\n" +
	"| `EX_A` | `hack/a.sh`; `make a` | `compat` | which \\| what |\n" +
	"| `EX_P_<NAME>` | `test/p` | — | built: EX_P_ONE |\n" +
	"\n| other | table |\n|---|---|\n| `EX_Z` | z |\n"

func TestParse(t *testing.T) {
	d, err := envdoc.Parse(strings.NewReader(table), prefix)
	if err != nil {
		t.Fatal(err)
	}
	want := []envdoc.Row{
		{Name: "EX_A", ReadBy: "`hack/a.sh`; `make a`", Default: "`compat`", Meaning: "which | what", Line: 7},
		{Name: "EX_P_<NAME>", ReadBy: "`test/p`", Default: "—", Meaning: "built: EX_P_ONE", Line: 8},
	}
	if !slices.Equal(d.Rows, want) {
		t.Errorf("Rows = %+v, want %+v", d.Rows, want)
	}
	if want := []string{"EX_A", "EX_P_X", "EX_A", "EX_P_", "EX_P_ONE", "EX_Z"}; !slices.Equal(d.Mentions, want) {
		t.Errorf("Mentions = %q, want %q", d.Mentions, want)
	}
	for name, want := range map[string]string{"EX_A": "EX_A", "EX_P_": "EX_P_<NAME>", "EX_P_ONE": "", "EX_Z": ""} {
		if r, _ := d.Row(name); r.Name != want {
			t.Errorf("Row(%s) = %q, want %q", name, r.Name, want)
		}
	}
	if r, ok := d.Built("EX_P_ONE"); !ok || r.Name != "EX_P_<NAME>" {
		t.Errorf("Built(EX_P_ONE) = %q, %v", r.Name, ok)
	}
	if _, ok := d.Built("EX_A"); ok {
		t.Error("Built(EX_A): a pattern row builds it")
	}
}

func TestParse_Errors(t *testing.T) {
	head := "| variable | read by | default | meaning |\n|---|---|---|---|\n"
	for name, doc := range map[string]string{
		"no table":         "# Environment\n",
		"missing a cell":   head + "| `EX_A` | x | y |\n",
		"name not in code": head + "| EX_A | x | y | z |\n",
		"other prefix":     head + "| `OTHER_A` | x | y | z |\n",
		"lower case":       head + "| `EX_a` | x | y | z |\n",
		"twice":            head + "| `EX_A` | x | y | z |\n| `EX_A` | x | y | z |\n",
	} {
		if _, err := envdoc.Parse(strings.NewReader(doc), prefix); err == nil {
			t.Errorf("%s: Parse succeeded", name)
		}
	}
}

func TestTargets(t *testing.T) {
	mk := "GO ?= go\nX := a:b\n.PHONY: test a\ntest: deps lint\nunit interop: deps\n\t@echo no: target\n%.o: %.c\nhelp:\nx::=y\n"
	if got, want := envdoc.Targets(mk), []string{"test", "unit", "interop", "help"}; !slices.Equal(got, want) {
		t.Errorf("Targets = %q, want %q", got, want)
	}
}

func TestCheck(t *testing.T) {
	d, err := envdoc.Parse(strings.NewReader(table), prefix)
	if err != nil {
		t.Fatal(err)
	}
	d.Mentions = []string{"EX_A", "EX_P_", "EX_P_ONE"} // without EX_P_X and EX_Z
	agreeing := func() envdoc.Repo {
		return envdoc.Repo{
			Code:     envdoc.Uses{"EX_A": {"hack/a.sh", "Makefile"}, "EX_P_": {"test/p/p_test.go"}},
			Docs:     envdoc.Uses{"EX_A": {"README.md"}},
			Defaults: []envdoc.Default{{Name: "EX_A", Value: "compat", File: "hack/a.sh"}},
			Targets:  []string{"test", "a"},
		}
	}
	if errs := d.Check(agreeing()); len(errs) != 0 {
		t.Fatalf("Check of an agreeing repository: %v", errs)
	}
	for _, tc := range []struct {
		name   string
		change func(r *envdoc.Repo)
		want   string
	}{
		{"undocumented", func(r *envdoc.Repo) { r.Code["EX_NEW"] = []string{"x.sh"} }, "EX_NEW (x.sh) has no row"},
		{"unused", func(r *envdoc.Repo) { delete(r.Code, "EX_P_") }, "EX_P_<NAME>: no file but the documentation uses it"},
		{"a doc names another", func(r *envdoc.Repo) { r.Docs["EX_OLD"] = []string{"docs/x.md"} }, "EX_OLD, named in docs/x.md, has no row"},
		{"other default", func(r *envdoc.Repo) { r.Defaults[0].Value = "upstream" }, `hack/a.sh defaults it to "upstream"`},
		{"reader does not use it", func(r *envdoc.Repo) { r.Code["EX_A"] = []string{"hack/b.sh", "Makefile"} }, "read by `hack/a.sh`, which does not use it"},
		{"reader's directory does not", func(r *envdoc.Repo) { r.Code["EX_P_"] = []string{"test/pp/p_test.go"} }, "read by `test/p`, which does not use it"},
		{"no such target", func(r *envdoc.Repo) { r.Targets = []string{"test"} }, "read by `make a`, which the Makefile does not define"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := agreeing()
			tc.change(&r)
			errs := d.Check(r)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("Check = %v, want one error containing %q", errs, tc.want)
			}
		})
	}
}

// repoFiles is a small repository: code, documentation, a Makefile, and
// what git ignores.
var repoFiles = map[string]string{
	"hack/a.sh":        "a=${EX_A:-compat}\n",
	"Makefile":         "EX_B ?= 1\nb:\n\tEX_B=$(EX_B) go test\n",
	"README.md":        "EX_A, EX_DOC\n",
	"CHANGELOG.md":     "EX_GONE\n",
	envdoc.TableFile:   "EX_TABLE\n",
	"docs/bench/x.txt": "EX_BENCH\n",
	"docs/x.md":        "EX_X\n",
	"bin.dat":          "EX_BIN\x00",
	".gitignore":       "/ignored/\n*.out\n",
	"ignored/a.go":     "EX_IGNORED\n",
	"t/c.out":          "EX_OUT\n",
}

func writeRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range repoFiles {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestScan(t *testing.T) {
	git := writeRepo(t)
	if out, err := exec.Command("git", "-C", git, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	for _, tc := range []struct{ name, root string }{{"git", git}, {"walk", writeRepo(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := envdoc.Scan(context.Background(), tc.root, prefix)
			if err != nil {
				t.Fatal(err)
			}
			if want := (envdoc.Uses{"EX_A": {"hack/a.sh"}, "EX_B": {"Makefile"}}); !equalUses(r.Code, want) {
				t.Errorf("Code = %v, want %v", r.Code, want)
			}
			if want := (envdoc.Uses{"EX_A": {"README.md"}, "EX_DOC": {"README.md"}, "EX_X": {"docs/x.md"}}); !equalUses(r.Docs, want) {
				t.Errorf("Docs = %v, want %v", r.Docs, want)
			}
			want := []envdoc.Default{{Name: "EX_B", Value: "1", File: "Makefile"}, {Name: "EX_A", Value: "compat", File: "hack/a.sh"}}
			if !slices.Equal(r.Defaults, want) {
				t.Errorf("Defaults = %+v, want %+v", r.Defaults, want)
			}
			if !slices.Equal(r.Targets, []string{"b"}) {
				t.Errorf("Targets = %q, want [b]", r.Targets)
			}
		})
	}
}

func equalUses(a, b envdoc.Uses) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
