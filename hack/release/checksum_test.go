package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteChecksums(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"b.tar.gz": "bee", "a.tar.gz": "ay"})
	names := []string{"b.tar.gz", "a.tar.gz"}
	sums, err := writeChecksums(dir, names, names)
	if err != nil {
		t.Fatal(err)
	}
	// SHA-256 of "ay" and "bee", as printf ay | sha256sum prints them.
	const sumA = "69d61997a241e97931db9dd1cfcef218041a752485f5f7956b09766287682da3"
	const sumB = "62cb81b5904a262ffaeed02abef36bfc540b09f964b8b0b636662f77ffce6714"
	if sums["a.tar.gz"] != sumA || sums["b.tar.gz"] != sumB || len(sums) != 2 {
		t.Errorf("writeChecksums = %v, want a.tar.gz %s, b.tar.gz %s", sums, sumA, sumB)
	}
	got, _ := os.ReadFile(filepath.Join(dir, sumsFile))
	wantAll := sumA + "  a.tar.gz\n" + sumB + "  b.tar.gz\n"
	if string(got) != wantAll {
		t.Errorf("SHA256SUMS:\n%s\nwant\n%s", got, wantAll)
	}
	for name, sum := range sums {
		one, _ := os.ReadFile(filepath.Join(dir, name+sumSuffix))
		if string(one) != sum+"  "+name+"\n" {
			t.Errorf("%s%s = %q", name, sumSuffix, one)
		}
	}
	if err := verifyChecksums(dir, names, names); err != nil {
		t.Errorf("verifyChecksums: %v", err)
	}
	if sha, err := exec.LookPath("sha256sum"); err == nil {
		for _, f := range []string{sumsFile, "a.tar.gz" + sumSuffix, "b.tar.gz" + sumSuffix} {
			cmd := exec.Command(sha, "--strict", "-c", f)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("sha256sum --strict -c %s: %v\n%s", f, err, out)
			}
		}
		// And the sums are sha256sum's own.
		cmd := exec.Command(sha, "a.tar.gz", "b.tar.gz")
		cmd.Dir = dir
		if out, err := cmd.Output(); err != nil || string(out) != wantAll {
			t.Errorf("sha256sum prints %q (%v); SHA256SUMS is %q", out, err, wantAll)
		}
	}

	t.Run("tampered", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(dir, "a.tar.gz"), []byte("ay!"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := verifyChecksums(dir, names, names)
		if err == nil || !strings.Contains(err.Error(), "SHA256SUMS: a.tar.gz: sum") || !strings.Contains(err.Error(), "a.tar.gz.sha256sum: a.tar.gz: sum") {
			t.Errorf("verifyChecksums after a change: %v, want both files to disagree", err)
		}
		if sha, lerr := exec.LookPath("sha256sum"); lerr == nil {
			cmd := exec.Command(sha, "-c", sumsFile)
			cmd.Dir = dir
			if err := cmd.Run(); err == nil {
				t.Error("sha256sum -c accepts the changed file")
			}
		}
	})
}

func TestWriteChecksumsOwnFiles(t *testing.T) {
	// SHA256SUMS lists every artifact; only the tarballs get a
	// .sha256sum of their own, as containerd's releases have.
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.tar.gz": "a", "a.cdx.json": "{}", "a.deb": "d"})
	names := []string{"a.tar.gz", "a.cdx.json", "a.deb"}
	if _, err := writeChecksums(dir, names, []string{"a.tar.gz"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a.cdx.json", "a.deb"} {
		if _, err := os.Stat(filepath.Join(dir, n+sumSuffix)); err == nil {
			t.Errorf("%s%s written", n, sumSuffix)
		}
	}
	all, _ := os.ReadFile(filepath.Join(dir, sumsFile))
	if got := strings.Count(string(all), "\n"); got != 3 {
		t.Errorf("SHA256SUMS has %d lines, want 3:\n%s", got, all)
	}
	if err := verifyChecksums(dir, names, []string{"a.tar.gz"}); err != nil {
		t.Error(err)
	}
}

func TestVerifyChecksums(t *testing.T) {
	const sum = "0000000000000000000000000000000000000000000000000000000000000000"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"not listed", map[string]string{sumsFile: sum + "  other\n"}, "SHA256SUMS: a is not listed"},
		{"extra", map[string]string{sumsFile: sum + "  a\n" + sum + "  other\n"}, "SHA256SUMS: lists other, which is not an artifact"},
		{"wrong one", map[string]string{"a" + sumSuffix: sum + "  b\n"}, "a.sha256sum: a is not listed"},
		{"missing", map[string]string{"a" + sumSuffix: ""}, "a.sha256sum: no checksums"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"a": "a", "other": "o"})
			if _, err := writeChecksums(dir, []string{"a"}, []string{"a"}); err != nil {
				t.Fatal(err)
			}
			writeTree(t, dir, tc.files)
			err := verifyChecksums(dir, []string{"a"}, []string{"a"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("verifyChecksums: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseChecksums(t *testing.T) {
	const sum = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	for _, tc := range []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{name: "text mode", in: sum + "  a.tar.gz\n", want: map[string]string{"a.tar.gz": sum}},
		{name: "binary mode", in: sum + " *a.tar.gz\n", want: map[string]string{"a.tar.gz": sum}},
		{name: "two", in: sum + "  a\n" + sum + "  b\n", want: map[string]string{"a": sum, "b": sum}},
		{name: "no newline at the end", in: sum + "  a", want: map[string]string{"a": sum}},
		{name: "empty", in: "", err: "no checksums"},
		{name: "upper case", in: strings.ToUpper(sum) + "  a\n", err: "not a lower-case hex SHA-256"},
		{name: "not hex", in: "x" + sum[1:] + "  a\n", err: "not a lower-case hex SHA-256"},
		{name: "short", in: sum[1:] + "  a\n", err: "want <sha256>  <name>"},
		{name: "one space", in: sum + " a\n", err: "want <sha256>  <name>"},
		{name: "path", in: sum + "  dir/a\n", err: `file name "dir/a"`},
		{name: "twice", in: sum + "  a\n" + sum + "  a\n", err: "line 2: a listed twice"},
		{name: "blank line", in: sum + "  a\n\n", err: "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseChecksums([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("parseChecksums: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("parseChecksums = %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("parseChecksums[%s] = %s, want %s", k, got[k], v)
				}
			}
		})
	}
}

func TestWriteChecksumsRefusesNames(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"d/a": "a"})
	for _, name := range []string{"d/a", "*a", " a", "a\\b"} {
		if _, err := writeChecksums(dir, []string{name}, nil); err == nil || !strings.Contains(err.Error(), "cannot go in a checksum file") {
			t.Errorf("writeChecksums(%q): %v, want a refusal", name, err)
		}
	}
}
