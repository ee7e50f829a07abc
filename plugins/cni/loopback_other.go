//go:build !linux

package cni

import "errors"

// setLoopbackUp is supported on Linux only.
func setLoopbackUp(string) error {
	return errors.New("cni: useInternalLoopback is supported on Linux only")
}
