package main

import (
	"archive/tar"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTree creates files under dir: name (slash-separated) to content;
// a name ending in "*" is executable (mode 0700, the star dropped),
// others get 0600, so that the modes must be normalized.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o600)
		if n, ok := strings.CutSuffix(name, "*"); ok {
			name, mode = n, 0o700
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriteTarball(t *testing.T) {
	mtime := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tree := map[string]string{
		"usr/local/bin/b*":                 "binary b",
		"usr/local/bin/a*":                 "binary a",
		"usr/local/etc/x/conf.d/z.toml":    "z = 1\n",
		"usr/local/share/doc/p/LICENSE":    "license\n",
		"usr/local/lib/systemd/system/u.s": "[Unit]\n",
	}
	stage := t.TempDir()
	writeTree(t, stage, tree)
	files, err := stagedFiles(stage)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "a.tar.gz")
	if err := writeTarball(out, files, mtime); err != nil {
		t.Fatal(err)
	}
	entries, err := readTarball(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		mode int64
		data string
	}{
		{"bin/a", 0o755, "binary a"},
		{"bin/b", 0o755, "binary b"},
		{"etc/x/conf.d/z.toml", 0o644, "z = 1\n"},
		{"lib/systemd/system/u.s", 0o644, "[Unit]\n"},
		{"share/doc/p/LICENSE", 0o644, "license\n"},
	}
	if len(entries) != len(want) {
		t.Fatalf("%d entries, want %d (files only, no directories)", len(entries), len(want))
	}
	for i, e := range entries {
		h, w := e.hdr, want[i]
		if h.Name != w.name || h.Mode != w.mode || string(e.data) != w.data || h.Typeflag != tar.TypeReg {
			t.Errorf("entry %d: %s mode %#o type %q %q, want %s mode %#o %q", i, h.Name, h.Mode, h.Typeflag, e.data, w.name, w.mode, w.data)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "root" || h.Gname != "root" || !h.ModTime.Equal(mtime) {
			t.Errorf("%s: owner %d:%d %s:%s, time %s; want root's, %s", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, mtime)
		}
	}

	t.Run("reproducible", func(t *testing.T) {
		// The same files staged again elsewhere, with other times on
		// disk, give the same bytes.
		stage2 := t.TempDir()
		writeTree(t, stage2, tree)
		if err := os.Chtimes(filepath.Join(stage2, "usr/local/bin/a"), time.Unix(1, 0), time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
		files2, err := stagedFiles(stage2)
		if err != nil {
			t.Fatal(err)
		}
		out2 := filepath.Join(t.TempDir(), "b.tar.gz")
		if err := writeTarball(out2, files2, mtime); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(out)
		b, _ := os.ReadFile(out2)
		if !bytes.Equal(a, b) {
			t.Error("the same files and time gave different tarballs")
		}
	})

	t.Run("tar -C /usr/local reads it", func(t *testing.T) {
		tarCmd, err := exec.LookPath("tar")
		if err != nil {
			t.Skip("no tar")
		}
		dest := filepath.Join(t.TempDir(), "usr", "local")
		if err := os.MkdirAll(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(tarCmd, "-C", dest, "-xzf", out).CombinedOutput(); err != nil {
			t.Fatalf("tar -xzf: %v\n%s", err, out)
		}
		for _, w := range want {
			b, err := os.ReadFile(filepath.Join(dest, w.name))
			if err != nil || string(b) != w.data {
				t.Errorf("%s after tar -x: %q, %v; want %q", w.name, b, err, w.data)
			}
		}
	})
}

func TestStagedFilesRefuses(t *testing.T) {
	t.Run("symlink", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"usr/local/bin/a*": "a"})
		if err := os.Symlink("a", filepath.Join(dir, "usr/local/bin/b")); err != nil {
			t.Fatal(err)
		}
		if _, err := stagedFiles(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("stagedFiles with a symlink: %v, want a refusal", err)
		}
	})
	t.Run("outside /usr/local", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"usr/local/bin/a*": "a", "etc/containerd/conf.d/x.toml": "x"})
		if _, err := stagedFiles(dir); err == nil || !strings.Contains(err.Error(), "/etc/containerd/conf.d/x.toml is not under /usr/local") {
			t.Errorf("stagedFiles with a file under /etc: %v, want a refusal", err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		if _, err := stagedFiles(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no files") {
			t.Errorf("stagedFiles of an empty directory: %v, want a refusal", err)
		}
	})
}

func TestWriteTarballRefuses(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a": "a"})
	p := filepath.Join(dir, "a")
	for _, tc := range []struct {
		name  string
		files []file
		want  string
	}{
		{"twice", []file{{name: "x", mode: 0o644, path: p}, {name: "x", mode: 0o755, path: p}}, "x twice"},
		{"mode", []file{{name: "x", mode: 0o4755, path: p}}, "want 0755 or 0644"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x.tar.gz")
			err := writeTarball(out, tc.files, time.Unix(0, 0))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("writeTarball: %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a tarball was written anyway")
			}
			if _, err := os.Stat(out + ".tmp"); err == nil {
				t.Error("the temporary file was left")
			}
		})
	}
}
