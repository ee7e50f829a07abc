package envdoc_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/envdoc"
)

// The repository's prefix, spelled so that this file does not use it.
var repoPrefix = strings.ToUpper("nrinet") + "_"

// root is the repository's root.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEnvironmentDoc holds docs/dev/environment.md to every file of the
// repository (Doc.Check).
func TestEnvironmentDoc(t *testing.T) {
	root := root(t)
	f, err := os.Open(filepath.Join(root, envdoc.TableFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := envdoc.Parse(f, repoPrefix)
	if err != nil {
		t.Fatal(err)
	}
	r, err := envdoc.Scan(context.Background(), root, repoPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Code) == 0 || len(r.Targets) == 0 {
		t.Fatalf("the scan of %s found %d names and %d make targets", root, len(r.Code), len(r.Targets))
	}
	for _, err := range d.Check(r) {
		t.Error(err)
	}
	t.Logf("%d rows, %d names in code, %d in other documents, %d defaults", len(d.Rows), len(r.Code), len(r.Docs), len(r.Defaults))
}

// TestEnvironmentDoc_CommandsReadNone checks what docs/dev/environment.md
// says first: nrinet's commands read none of the variables. No
// non-test Go file of a package they are built from uses one.
func TestEnvironmentDoc_CommandsReadNone(t *testing.T) {
	root := root(t)
	cmd := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{end}}`,
		"./cmd/nrinetd", "./cmd/nri-podnet", "./cmd/nri-cni")
	cmd.Dir = root
	// The commands are modules of their own, joined by go.work.
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	n := 0
	for _, file := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, file)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a dependency's
		}
		n++
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if names := envdoc.Names(string(b), repoPrefix); len(names) > 0 {
			t.Errorf("%s, part of nrinet's commands, uses %s", filepath.ToSlash(rel), strings.Join(names, ", "))
		}
	}
	if n == 0 {
		t.Fatalf("go list named no file of this repository:\n%s", out)
	}
}
