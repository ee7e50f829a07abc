//go:build !linux

package generate

import "errors"

// hostPropagation cannot tell mount propagation outside Linux.
func hostPropagation(path string) (string, error) {
	return "", errors.New("mount propagation is only known on Linux")
}
