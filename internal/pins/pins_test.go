package pins

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
)

// root is the repository's root, two levels up from this package.
const root = "../.."

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       map[string]string
		err        string
	}{
		{name: "comments and blanks", text: "# x\n\nA=v1.2.3\nB_2=v0.10.0\n", want: map[string]string{"A": "v1.2.3", "B_2": "v0.10.0"}},
		{name: "no equals", text: "A v1.2.3\n", err: `line 1 "A v1.2.3": want KEY=value`},
		{name: "quoted", text: `A="v1.2.3"` + "\n", err: "no quotes or spaces"},
		{name: "expansion", text: "A=$B\n", err: "no quotes or spaces"},
		{name: "no v", text: "A=1.2.3\n", err: `line 1: A="1.2.3" is not a version`},
		{name: "pre-release", text: "A=v1.2.3-rc.1\n", err: "is not a version"},
		{name: "leading zero", text: "A=v1.02.3\n", err: "is not a version"},
		{name: "twice", text: "A=v1.2.3\n#\nA=v1.2.4\n", err: "line 3: A again (first v1.2.3)"},
		{name: "empty key", text: "=v1.2.3\n", err: "want KEY=value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse: %v, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Parse: %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// TestVars checks that every line of versions.env has its variable and
// every variable its line.
func TestVars(t *testing.T) {
	vars := map[string]string{
		"KUBERNETES_VERSION":        Kubernetes,
		"ETCD_VERSION":              Etcd,
		"COREDNS_VERSION":           CoreDNS,
		"CONTAINERD_VERSION":        Containerd,
		"CRIO_VERSION":              CRIO,
		"NRI_VERSION":               NRI,
		"CRI_TOOLS_VERSION":         CRITools,
		"CNI_PLUGINS_VERSION":       CNIPlugins,
		"PROMETHEUS_MODULE_VERSION": PrometheusModule,
	}
	all := All()
	for k, v := range all {
		if got, ok := vars[k]; !ok {
			t.Errorf("versions.env has %s, package pins no variable for it", k)
		} else if got != v {
			t.Errorf("%s: variable %q, file %q", k, got, v)
		}
	}
	for k := range vars {
		if _, ok := all[k]; !ok {
			t.Errorf("variable for %s, which versions.env does not have", k)
		}
	}
}

// TestNRIAgrees checks that the places that must name upstream NRI's
// version and cannot read versions.env name NRI: nrinet's api.Version (the
// protocol it speaks, in the module a runtime links), compat/nri's
// apisurface (a module outside the workspace) and the go.mod files of the
// test modules that depend on upstream.
func TestNRIAgrees(t *testing.T) {
	if api.Version != NRI {
		t.Errorf("api.Version is %s, NRI_VERSION %s", api.Version, NRI)
	}
	for _, c := range []struct{ file, re string }{
		{"compat/nri/internal/apisurface/upstream.go", `(?m)^const UpstreamVersion = "(v[^"]+)"$`},
		{"test/interop/go.mod", `(?m)^\s*github\.com/containerd/nri (v\S+)`},
		{"test/containerd-e2e/go.mod", `(?m)^\s*github\.com/containerd/nri (v\S+)`},
	} {
		data, err := os.ReadFile(filepath.Join(root, c.file))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(c.re).FindSubmatch(data)
		if m == nil {
			t.Errorf("%s: no %s", c.file, c.re)
		} else if string(m[1]) != NRI {
			t.Errorf("%s: upstream NRI %s, NRI_VERSION %s", c.file, m[1], NRI)
		}
	}
}

// elsewhere are the files that may write a pinned version out, with why.
var elsewhere = map[string]string{
	"compat/nri/pkg/api/version_test.go":         "containerd versions as input of compat/nri's version table: data, in a module that cannot read pins",
	"internal/doclinks/doclinks_test.go":         "a heading's anchor, as test data",
	"api/version.go":                             "the NRI protocol nrinet speaks, in the module a runtime links; TestNRIAgrees checks it",
	"compat/nri/internal/apisurface/upstream.go": "a module outside the workspace; TestNRIAgrees checks it",
}

// otherSoftware are strings that hold a pinned version's digits but are
// another program's version.
var otherSoftware = []string{
	"/busybox:1.37.0-2", // e2e image, Kubernetes' manifest
}

// TestPinnedOnce checks that no script, Makefile, workflow or Go code
// writes a pinned version out but in versions.env: comments and
// documentation may, code may not (it reads versions.env or package pins).
func TestPinnedOnce(t *testing.T) {
	versions := map[string]string{}
	for k, v := range All() {
		versions[v] = k
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "_output", "testdata", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		comment, ok := commentPrefix(rel)
		if !ok || rel == "internal/pins/versions.env" || elsewhere[rel] != "" {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, comment) {
				continue
			}
			for _, o := range otherSoftware {
				line = strings.ReplaceAll(line, o, "")
			}
			if m := matchVersion(line, versions); m != "" {
				t.Errorf("%s:%d writes %s (%s) out: read it from internal/pins/versions.env\n\t%s", rel, n, m, versions[m], line)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// commentPrefix returns what starts a comment line in the file at rel, and
// whether the file is one TestPinnedOnce reads.
func commentPrefix(rel string) (string, bool) {
	base := filepath.Base(rel)
	switch {
	case strings.HasSuffix(base, ".go"):
		return "//", true
	case base == "Makefile", strings.HasSuffix(base, ".sh"), strings.HasSuffix(base, ".awk"),
		strings.HasSuffix(base, ".toml"), strings.HasSuffix(base, ".yaml"), strings.HasSuffix(base, ".yml"),
		strings.HasSuffix(base, ".env"), rel == filepath.Join(".ci", "run"):
		return "#", true
	}
	return "", false
}

// matchVersion returns the pinned version line writes out, with or without
// its v, not as a part of a longer version or word, or "".
func matchVersion(line string, versions map[string]string) string {
	for v := range versions {
		for _, w := range []string{v, strings.TrimPrefix(v, "v")} {
			for i := 0; i < len(line); {
				j := strings.Index(line[i:], w)
				if j < 0 {
					break
				}
				j += i
				end := j + len(w)
				before := j == 0 || !(isAlnum(line[j-1]) || line[j-1] == '.')
				after := end == len(line) || !(isAlnum(line[end]) || line[end] == '.' && end+1 < len(line) && isAlnum(line[end+1]))
				if before && after {
					return v
				}
				i = j + 1
			}
		}
	}
	return ""
}

func isAlnum(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}
