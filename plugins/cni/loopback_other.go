//go:build !linux

package cniplugin

import "errors"

// setLoopbackUp is supported on Linux only.
func setLoopbackUp(string) error {
	return errors.New("cniplugin: useInternalLoopback is supported on Linux only")
}
