package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nrinet/nrinet/internal/imagebuild"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{"all by default", nil, components, ""},
		{"one", []string{"-version", "v1", "nri-cni"}, []string{"nri-cni"}, ""},
		{"unknown", []string{"nrinetd"}, nil, `unknown component "nrinetd"`},
		{"one arch", []string{"-arch", "arm64", "nri-cni"}, []string{"nri-cni"}, ""},
		{"arch twice", []string{"-arch", "amd64,amd64"}, nil, `-arch: "amd64" twice`},
		{"no arch", []string{"-arch", ","}, nil, "-arch: no architecture"},
		{"push", []string{"-push", "127.0.0.1:5000/nrinet"}, components, ""},
		{"push to no repository", []string{"-push", "Not A/Repo"}, nil, `-push "Not A/Repo": not a repository`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(tc.args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("parse(%q) = %v, want an error with %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o.components, tc.want) {
				t.Errorf("parse(%q) components %q, want %q", tc.args, o.components, tc.want)
			}
		})
	}
}

// buildImages runs the command with args into a new directory and returns
// it and the command's output.
func buildImages(t *testing.T, version string, args ...string) (string, string) {
	t.Helper()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), append([]string{"-version", version, "-out", out}, args...), &stdout, &stderr); err != nil {
		t.Fatalf("image -version %s %q: %v\n%s", version, args, err, stderr.Bytes())
	}
	return out, stdout.String()
}

// TestImages builds the images as `make image-push` does, to a registry
// on 127.0.0.1 (checkPushed), and reads the archives back: both
// references naming one index, an image per architecture in it with its
// platform, the entrypoint, and a layer whose one file is a static
// executable for that architecture; this machine's runs. One build serves
// all of it: each build links every binary again (the version is stamped
// in).
func TestImages(t *testing.T) {
	version := "test-" + fmt.Sprint(time.Now().UnixNano())
	repo := startRegistry(t)
	out, stdout := buildImages(t, version, "-push", repo)
	for _, c := range components {
		if !strings.Contains(stdout, imagebuild.Ref(c, version)+" sha256:") {
			t.Errorf("the output does not name %s:\n%s", imagebuild.Ref(c, version), stdout)
		}
	}
	t.Run("pushed", func(t *testing.T) { checkPushed(t, out, stdout, repo, version) })
	for _, c := range components {
		t.Run(c, func(t *testing.T) {
			p, err := imagebuild.Extract(filepath.Join(out, c+".tar"), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			indexes, err := imagebuild.Indexes(p)
			if err != nil {
				t.Fatal(err)
			}
			refs := []string{imagebuild.Ref(c, version), imagebuild.Ref(c, imagebuild.LatestTag)}
			if len(indexes) != 2 || indexes[refs[0]] == nil || indexes[refs[1]] == nil {
				t.Fatalf("the archive names %d indexes, want %q", len(indexes), refs)
			}
			d0, _ := indexes[refs[0]].Digest()
			d1, _ := indexes[refs[1]].Digest()
			if d0 != d1 {
				t.Errorf("%s is %s but %s is %s", refs[0], d0, refs[1], d1)
			}
			checkIndex(t, indexes[refs[0]], c, version)
		})
	}
	// The same sources and version, the same archive, byte for byte: one
	// component, one architecture, built twice.
	t.Run("reproducible", func(t *testing.T) {
		a, _ := buildImages(t, version, "-arch", "amd64", "nri-cni")
		b, _ := buildImages(t, version, "-arch", "amd64", "nri-cni")
		ab, err := os.ReadFile(filepath.Join(a, "nri-cni.tar"))
		if err != nil {
			t.Fatal(err)
		}
		bb, err := os.ReadFile(filepath.Join(b, "nri-cni.tar"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ab, bb) {
			t.Errorf("nri-cni.tar differs between two builds of the same version")
		}
	})
}

// checkIndex checks that idx holds one image per architecture of `make
// image`, each listed with its platform, and checks each image.
func checkIndex(t *testing.T, idx v1.ImageIndex, component, version string) {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("index entry %s has no platform", d.Digest)
		}
		platforms = append(platforms, d.Platform.String())
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(d.Platform.Architecture, func(t *testing.T) {
			checkImage(t, img, component, version, d.Platform.Architecture)
		})
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("index platforms %q, want %q", platforms, want)
	}
}

// checkImage checks one image of the index: platform linux/arch, the
// entrypoint and version label, a layer of one static executable for arch,
// which, when arch is this machine's, runs.
func checkImage(t *testing.T, img v1.Image, c, version, arch string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	entrypoint := []string{"/usr/local/bin/" + c}
	if cf.OS != "linux" || cf.Architecture != arch || !slices.Equal(cf.Config.Entrypoint, entrypoint) {
		t.Errorf("config: %s/%s entrypoint %q, want linux/%s %q", cf.OS, cf.Architecture, cf.Config.Entrypoint, arch, entrypoint)
	}
	if v := cf.Config.Labels["org.opencontainers.image.version"]; v != version {
		t.Errorf("label org.opencontainers.image.version %q, want %q", v, version)
	}
	bin := layerBinary(t, img, "usr/local/bin/"+c)
	checkStatic(t, bin, arch)
	if arch != runtime.GOARCH {
		return
	}
	// The binary runs: -h prints its usage, naming it, on stdout and
	// exits 0.
	cmd := exec.Command(bin, "-h")
	usage, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(usage), "Usage:\n  "+c+" ") {
		t.Errorf("%s -h: %v\n%s", c, err, usage)
	}
	// -version prints the version stamped in (internal/version).
	out, err := exec.Command(bin, "-version").CombinedOutput()
	if want := c + " " + version; err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("%s -version: %v, %q; want %q", c, err, out, want)
	}
}

// layerBinary checks that img has one layer holding the directories up to
// name and name itself, an executable owned by root and dated at the
// epoch, and writes that file into a temporary directory.
func layerBinary(t *testing.T, img v1.Image, name string) string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	bin := filepath.Join(t.TempDir(), filepath.Base(name))
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(imagebuild.Epoch) {
			t.Errorf("%s: owner %d:%d, dated %v; want 0:0 at the epoch", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		if h.Name != name {
			continue
		}
		if h.Typeflag != tar.TypeReg || h.Mode != 0o755 {
			t.Errorf("%s: type %q mode %o, want a regular file of mode 0755", name, h.Typeflag, h.Mode)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"usr/", "usr/local/", "usr/local/bin/", name}
	if !slices.Equal(names, want) {
		t.Fatalf("layer entries %q, want %q", names, want)
	}
	return bin
}

// checkStatic checks that bin is an ELF executable for arch with no
// program interpreter (statically linked: CGO_ENABLED=0).
func checkStatic(t *testing.T, bin, arch string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	defer f.Close()
	machine, ok := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if !ok {
		t.Fatalf("no ELF machine known for %s", arch)
	}
	if f.Type != elf.ET_EXEC || f.Machine != machine {
		t.Errorf("%s: ELF type %v machine %v, want an executable for %s", bin, f.Type, f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: not statically linked", bin)
		}
	}
}
