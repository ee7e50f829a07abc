package gomod

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"

	"github.com/nrinet/nrinet/internal/pins"
)

// runtimes are the oldest runtime versions nrinet supports, by module.
var runtimes = []struct{ mod, version string }{
	{"github.com/cri-o/cri-o", pins.CRIO},
	{"github.com/containerd/containerd/v2", pins.Containerd},
}

// linked are the modules of this repository a runtime links, relative to
// the repository's root.
var linked = []string{".", "compat/nri"}

// notInRuntimes are requirements of the linked modules that a runtime may
// not have, with why that is allowed: go mod tidy adds a module to a
// runtime's go.mod only when a package the runtime builds needs it.
var notInRuntimes = map[string]string{
	"github.com/nrinet/nrinet":          "nrinet itself, replaced by its directory",
	"github.com/planetscale/vtprotobuf": "the generated marshal code's helpers; a runtime gains it at this version",
	"github.com/BurntSushi/toml":        "only the validator package's tests read TOML; containerd does not build them",
	"github.com/pelletier/go-toml/v2":   "only compat/nri's default-validator tests read TOML; CRI-O does not build them",
	"github.com/pmezard/go-difflib":     "testify's, and only tests use testify",
	"gopkg.in/yaml.v3":                  "testify's, and only tests use testify",
}

// readModFile parses the go.mod file at path.
func readModFile(t *testing.T, path string) *modfile.File {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// runtimeModFile fetches mod@version's go.mod through the module proxy.
func runtimeModFile(t *testing.T, mod, version string) *modfile.File {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-m", "-json", mod+"@"+version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s@%s: %v", mod, version, err)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(out, &info); err != nil || info.GoMod == "" {
		t.Fatalf("go list -m %s@%s: no go.mod in %s", mod, version, out)
	}
	return readModFile(t, info.GoMod)
}

func TestLinkedModulesRequireNoNewerThanRuntimes(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range runtimes {
		rtMod := runtimeModFile(t, rt.mod, rt.version)
		has := map[string]string{}
		for _, r := range rtMod.Require {
			has[r.Mod.Path] = r.Mod.Version
		}
		for _, dir := range linked {
			ours := readModFile(t, filepath.Join(root, dir, "go.mod"))
			t.Run(rt.mod+"@"+rt.version+"/"+ours.Module.Mod.Path, func(t *testing.T) {
				if ours.Go == nil || rtMod.Go == nil {
					t.Fatal("a go directive is missing")
				}
				if semver.Compare("v"+ours.Go.Version, "v"+rtMod.Go.Version) > 0 {
					t.Errorf("go %s is newer than %s's go %s", ours.Go.Version, rt.mod, rtMod.Go.Version)
				}
				if ours.Toolchain != nil {
					t.Errorf("toolchain %s: a linked module must not ask for a toolchain", ours.Toolchain.Name)
				}
				for _, r := range ours.Require {
					theirs, ok := has[r.Mod.Path]
					switch {
					case !ok && notInRuntimes[r.Mod.Path] == "":
						t.Errorf("requires %s %s, which %s does not require: adopting nrinet could add it", r.Mod.Path, r.Mod.Version, rt.mod)
					case ok && semver.Compare(r.Mod.Version, theirs) > 0:
						t.Errorf("requires %s %s, newer than %s's %s", r.Mod.Path, r.Mod.Version, rt.mod, theirs)
					}
				}
			})
		}
	}
}
