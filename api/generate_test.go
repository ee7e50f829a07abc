package api_test

import (
	"google.golang.org/protobuf/reflect/protoregistry"

	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGeneratedCodeUpToDate regenerates the Go code from api.proto into a
// temporary directory, with the arguments of the go:generate directive in
// generate.go (-out pointing at the temporary directory), and checks that
// the committed files are identical.
func TestGeneratedCodeUpToDate(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	src, err := os.ReadFile("generate.go")
	if err != nil {
		t.Fatal(err)
	}
	const directive = "//go:generate go run ../internal/cmd/protogen "
	var args []string
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, directive); ok {
			args = strings.Fields(rest)
		}
	}
	i := slices.Index(args, "-out")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("generate.go has no protogen directive with -out: %q", args)
	}
	out := t.TempDir()
	args[i+1] = out
	cmd := exec.Command(goCmd, append([]string{"run", "github.com/nrinet/nrinet/internal/cmd/protogen"}, args...)...)
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

// TestRegisteredAsUpstream: the schema is known to the protobuf runtime
// by upstream's path and package, so that lookups by either cannot tell
// nrinet's api from containerd/nri's.
func TestRegisteredAsUpstream(t *testing.T) {
	fd, err := protoregistry.GlobalFiles.FindFileByPath("pkg/api/api.proto")
	if err != nil {
		t.Fatal(err)
	}
	if fd.Package() != "nri.pkg.api.v1alpha1" {
		t.Errorf("pkg/api/api.proto has package %q, want nri.pkg.api.v1alpha1", fd.Package())
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName("nri.pkg.api.v1alpha1.PodSandbox")
	if err != nil || d.ParentFile().Path() != "pkg/api/api.proto" {
		t.Errorf("nri.pkg.api.v1alpha1.PodSandbox: %v, %v; want it from pkg/api/api.proto", d, err)
	}
}

// TestResourceHelpersUpToDate runs internal/cmd/resourcegen into a
// temporary file and checks that the committed resources_generated.go is
// identical.
func TestResourceHelpersUpToDate(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	out := filepath.Join(t.TempDir(), "resources_generated.go")
	cmd := exec.Command(goCmd, "run", "github.com/nrinet/nrinet/internal/cmd/resourcegen", "-out", out)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("running resourcegen: %v\n%s", err, output)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("resources_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("api/resources_generated.go is stale: run `go generate ./api` and commit the result")
	}
}
