package api_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestGeneratedCodeUpToDate regenerates the Go code from api.proto into a
// temporary directory and checks that the committed files are identical.
// The protogen arguments must match the go:generate directive in
// generate.go (with -out pointing at the temporary directory).
func TestGeneratedCodeUpToDate(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	out := t.TempDir()
	cmd := exec.Command(goCmd, "run", "github.com/nrinet/nrinet/internal/cmd/protogen",
		"-I", "github.com/nrinet/nrinet/api=.",
		"-param", "module=github.com/nrinet/nrinet",
		"-out", out,
		"github.com/nrinet/nrinet/api/api.proto")
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("running protogen: %v\n%s", err, output)
	}

	generated, err := filepath.Glob(filepath.Join(out, "api", "*.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := filepath.Glob("*.pb.go")
	if err != nil {
		t.Fatal(err)
	}
	for i := range generated {
		generated[i] = filepath.Base(generated[i])
	}
	slices.Sort(generated)
	slices.Sort(committed)
	if !slices.Equal(generated, committed) {
		t.Fatalf("generated files %v, committed files %v; run `go generate ./api`", generated, committed)
	}
	if len(generated) == 0 {
		t.Fatal("protogen generated no files")
	}

	for _, name := range generated {
		want, err := os.ReadFile(filepath.Join(out, "api", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("api/%s is stale: run `go generate ./api` and commit the result", name)
		}
	}
}
