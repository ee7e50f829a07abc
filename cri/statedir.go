package cri

import (
	"fmt"
	"io/fs"
	"os"
)

// SecureDir makes dir a directory only its owner can use. It creates dir
// (and missing parents) with mode 0700; an existing directory to which
// group or others have any permission (mode 1777 or 0755, say) is changed
// to mode 0700, which also clears its sticky, setgid and setuid bits.
// It returns the mode such a directory had, and 0 when it changed
// nothing.
func SecureDir(dir string) (was fs.FileMode, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("cri: directory %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, fmt.Errorf("cri: directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return 0, fmt.Errorf("cri: %s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return 0, nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return 0, fmt.Errorf("cri: making directory %s mode 0700: %w", dir, err)
	}
	return fi.Mode(), nil
}
