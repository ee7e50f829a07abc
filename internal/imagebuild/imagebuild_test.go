package imagebuild_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nrinet/nrinet/internal/imagebuild"
)

func TestRef(t *testing.T) {
	for _, tc := range []struct{ component, tag, want string }{
		{"nri-podnet", "v0.1.0", "localhost/nrinet/nri-podnet:v0.1.0"},
		{"nri-cni", imagebuild.LatestTag, "localhost/nrinet/nri-cni:latest"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := imagebuild.Ref(tc.component, tc.tag); got != tc.want {
				t.Errorf("Ref(%q, %q) = %q, want %q", tc.component, tc.tag, got, tc.want)
			}
		})
	}
}

func TestDirs(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"usr/local/bin/x", []string{"usr", "usr/local", "usr/local/bin"}},
		{"x", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range imagebuild.Dirs(tc.name) {
				if d.Mode != fs.ModeDir|0o755 {
					t.Errorf("%s: mode %v, want %v", d.Name, d.Mode, fs.ModeDir|0o755)
				}
				got = append(got, d.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Dirs(%q) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

// entry is what a test reads back of a tar entry.
type entry struct {
	name     string
	typeflag byte
	mode     int64
	link     string
	data     string
}

// readTar returns the entries of a tar stream, checking that each is owned
// by root and dated at the epoch.
func readTar(t *testing.T, r io.Reader) []entry {
	t.Helper()
	var entries []entry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owner %d:%d (%q:%q), want 0:0", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if !h.ModTime.Equal(imagebuild.Epoch) {
			t.Errorf("%s: dated %v, want %v", h.Name, h.ModTime, imagebuild.Epoch)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, entry{h.Name, h.Typeflag, h.Mode, h.Linkname, string(data)})
	}
}

func TestLayer(t *testing.T) {
	files := []imagebuild.File{
		{Name: "bin", Mode: fs.ModeDir | 0o755},
		{Name: "bin/tool", Mode: 0o755, Data: []byte("#!tool\n")},
		{Name: "bin/alias", Mode: fs.ModeSymlink | 0o777, Link: "tool"},
		{Name: "bin/suid", Mode: fs.ModeSetuid | 0o755, Data: []byte("s")},
		{Name: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
	b, err := imagebuild.Layer(files)
	if err != nil {
		t.Fatal(err)
	}
	got := readTar(t, bytes.NewReader(b))
	want := []entry{
		{"bin/", tar.TypeDir, 0o755, "", ""},
		{"bin/tool", tar.TypeReg, 0o755, "", "#!tool\n"},
		{"bin/alias", tar.TypeSymlink, 0o777, "tool", ""},
		{"bin/suid", tar.TypeReg, 0o4755, "", "s"},
		{"tmp/", tar.TypeDir, 0o1777, "", ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("layer entries:\n got %v\nwant %v", got, want)
	}
}

func TestLayerRefuses(t *testing.T) {
	for _, tc := range []struct {
		file imagebuild.File
		want string
	}{
		{imagebuild.File{Name: "/bin/x", Mode: 0o755}, `"/bin/x" is not a clean relative path`},
		{imagebuild.File{Name: "../x", Mode: 0o644}, `"../x" is not a clean relative path`},
		{imagebuild.File{Name: "a//b", Mode: 0o644}, `"a//b" is not a clean relative path`},
		{imagebuild.File{Name: "", Mode: 0o644}, `"" is not a clean relative path`},
		{imagebuild.File{Name: "dev/null", Mode: fs.ModeDevice | fs.ModeCharDevice | 0o666}, "dev/null: unsupported mode"},
	} {
		t.Run(tc.file.Name, func(t *testing.T) {
			_, err := imagebuild.Layer([]imagebuild.File{tc.file})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Layer(%+v) = %v, want an error with %q", tc.file, err, tc.want)
			}
		})
	}
}

// testImage is a one-file image.
func testImage(t *testing.T, data string) v1.Image {
	t.Helper()
	files := append(imagebuild.Dirs("usr/bin/x"), imagebuild.File{Name: "usr/bin/x", Mode: 0o755, Data: []byte(data)})
	img, err := imagebuild.Image(files, "arm64", v1.Config{Entrypoint: []string{"/usr/bin/x"}})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestWriteAndRead(t *testing.T) {
	dir := t.TempDir()
	img := testImage(t, "x")
	refs := []string{"localhost/nrinet/x:v1", "localhost/nrinet/x:latest"}
	archive := filepath.Join(dir, "x.tar")
	if err := imagebuild.Write(archive, img, refs...); err != nil {
		t.Fatal(err)
	}

	// The archive itself: root-owned, epoch-dated, in lexical order.
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	for _, e := range readTar(t, f) {
		names = append(names, e.name)
	}
	if !slices.IsSorted(names) || !slices.Contains(names, "index.json") || !slices.Contains(names, "oci-layout") {
		t.Errorf("archive entries %q: want index.json and oci-layout, in lexical order", names)
	}

	out := t.TempDir()
	p, err := imagebuild.Extract(archive, out)
	if err != nil {
		t.Fatal(err)
	}
	images, err := imagebuild.Images(p)
	if err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != len(refs) {
		t.Errorf("the index names %d images, want %d (%q)", len(images), len(refs), refs)
	}
	for _, ref := range refs {
		got, ok := images[ref]
		if !ok {
			t.Errorf("the index does not name %s", ref)
			continue
		}
		d, err := got.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if d != want {
			t.Errorf("%s: digest %s, want %s", ref, d, want)
		}
		cf, err := got.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || cf.Architecture != "arm64" || !slices.Equal(cf.Config.Entrypoint, []string{"/usr/bin/x"}) || !cf.Created.IsZero() {
			t.Errorf("%s: config os %q arch %q entrypoint %q created %v, want linux, arm64, [/usr/bin/x], none", ref, cf.OS, cf.Architecture, cf.Config.Entrypoint, cf.Created)
		}
		layers, err := got.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: layers %v, %v; want one", ref, layers, err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		entries := readTar(t, rc)
		rc.Close()
		if !slices.Contains(entries, entry{"usr/bin/x", tar.TypeReg, 0o755, "", "x"}) {
			t.Errorf("%s: layer %v has no usr/bin/x", ref, entries)
		}
	}
}

func TestWriteIsReproducible(t *testing.T) {
	dir := t.TempDir()
	var archives [][]byte
	for _, name := range []string{"a.tar", "b.tar"} {
		archive := filepath.Join(dir, name)
		// A fresh image each time: nothing cached between the two.
		if err := imagebuild.Write(archive, testImage(t, "same"), "localhost/nrinet/x:v1"); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, b)
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("the same image written twice gives different archives")
	}
}

func TestWriteRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		refs []string
		want string
	}{
		{"no ref", nil, "no image reference"},
		{"no tag", []string{"localhost/nrinet/x"}, `image reference "localhost/nrinet/x"`},
		{"bad tag", []string{"localhost/nrinet/x:v1", "localhost/nrinet/x:a+b"}, `image reference "localhost/nrinet/x:a+b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			archive := filepath.Join(dir, "x.tar")
			err := imagebuild.Write(archive, testImage(t, "x"), tc.refs...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Write(%q) = %v, want an error with %q", tc.refs, err, tc.want)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("a failed Write left %v", left)
			}
		})
	}
}

func TestExtractRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    tar.Header
		want string
	}{
		{"escape", tar.Header{Name: "../x", Typeflag: tar.TypeReg, Mode: 0o644}, "outside the archive"},
		{"absolute", tar.Header{Name: "/x", Typeflag: tar.TypeReg, Mode: 0o644}, "outside the archive"},
		{"symlink", tar.Header{Name: "x", Typeflag: tar.TypeSymlink, Linkname: "/etc"}, "not a file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			if err := tw.WriteHeader(&tc.h); err != nil {
				t.Fatal(err)
			}
			tw.Close()
			archive := filepath.Join(dir, "x.tar")
			if err := os.WriteFile(archive, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := imagebuild.Extract(archive, out); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Extract = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
