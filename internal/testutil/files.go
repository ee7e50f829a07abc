package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes content to the file name in dir, mode 0644, and
// returns its path; a failure fails the test.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
