package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// sumsFile is the checksum file of every artifact of a release.
const sumsFile = "SHA256SUMS"

// sumSuffix names the checksum file of one artifact: <artifact>.sha256sum,
// as containerd's releases have one for each tarball.
const sumSuffix = ".sha256sum"

// fileSHA256 returns the SHA-256 of the file at path, in lower-case hex.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sumLine is one line in sha256sum's format: the hash, two spaces (text
// mode, which on Linux reads the same bytes as binary mode's " *"), the
// name.
func sumLine(sum, name string) string {
	return sum + "  " + name + "\n"
}

// writeChecksums writes, in dir, SHA256SUMS for all of names (files of
// dir), in name order, and <name>.sha256sum for each of those of names
// that are in own too; it returns the sums by name.
func writeChecksums(dir string, names, own []string) (map[string]string, error) {
	names = slices.Sorted(slices.Values(names))
	sums := make(map[string]string, len(names))
	var all strings.Builder
	for _, name := range names {
		if err := checkSumName(name); err != nil {
			return nil, err
		}
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		sums[name] = sum
		line := sumLine(sum, name)
		all.WriteString(line)
		if !slices.Contains(own, name) {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name+sumSuffix), []byte(line), 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, sumsFile), []byte(all.String()), 0o644); err != nil {
		return nil, err
	}
	return sums, nil
}

// checkSumName refuses a name sha256sum would read differently from how
// it was written: one with a path, a newline or a backslash (which
// sha256sum escapes), or a leading space or star.
func checkSumName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\\\n\r") || strings.HasPrefix(name, " ") || strings.HasPrefix(name, "*") {
		return fmt.Errorf("checksum: file name %q cannot go in a checksum file", name)
	}
	return nil
}

// parseChecksums reads checksum lines as sha256sum -c does (strictly:
// 64 lower-case hex digits, then two spaces or a space and a star, then a
// plain file name) and returns the sums by name. An empty file, a name
// listed twice, or any other line is an error naming the line.
func parseChecksums(b []byte) (map[string]string, error) {
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if len(line) < 67 || (line[64:66] != "  " && line[64:66] != " *") {
			return nil, fmt.Errorf("line %d: %q: want <sha256>  <name>", n, line)
		}
		sum, name := line[:64], line[66:]
		if _, err := hex.DecodeString(sum); err != nil || strings.ToLower(sum) != sum {
			return nil, fmt.Errorf("line %d: %q: not a lower-case hex SHA-256", n, sum)
		}
		if err := checkSumName(name); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := sums[name]; dup {
			return nil, fmt.Errorf("line %d: %s listed twice", n, name)
		}
		sums[name] = sum
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(sums) == 0 {
		return nil, errors.New("no checksums")
	}
	return sums, nil
}

// verifyChecksums checks, in dir, that SHA256SUMS lists exactly names, that
// the <name>.sha256sum of each of own lists exactly its own, and that
// every sum matches the file's content.
func verifyChecksums(dir string, names, own []string) error {
	actual := map[string]string{}
	var errs []error
	for _, name := range names {
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		actual[name] = sum
	}
	check := func(file string, want []string) {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			errs = append(errs, err)
			return
		}
		sums, err := parseChecksums(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
			return
		}
		for _, name := range want {
			got, ok := sums[name]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s: %s is not listed", file, name))
			case actual[name] != "" && got != actual[name]:
				errs = append(errs, fmt.Errorf("%s: %s: sum %s, but the file's is %s", file, name, got, actual[name]))
			}
		}
		for name := range sums {
			if !slices.Contains(want, name) {
				errs = append(errs, fmt.Errorf("%s: lists %s, which is not an artifact", file, name))
			}
		}
	}
	check(sumsFile, names)
	for _, name := range own {
		check(name+sumSuffix, []string{name})
	}
	return errors.Join(errs...)
}
