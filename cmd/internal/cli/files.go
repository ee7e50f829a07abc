package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ReadFile reads the file the flag name gives (a configuration, a
// kubeconfig). An error is a usage error naming the flag and the file:
// `-config "/etc/x.json": no such file or directory`.
func ReadFile(name, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == path {
			err = pe.Err // the path is said once
		}
		return nil, FileError(name, path, err)
	}
	return b, nil
}

// FileError is the usage error of a file the flag name gives, whose
// content err refuses: `-config "/etc/x.json": podnet: parsing
// configuration: json: unknown field "bridges"`; nil stays nil.
func FileError(name, path string, err error) error {
	if err == nil {
		return nil
	}
	return Usage(fmt.Errorf("-%s %q: %w", name, path, err))
}
