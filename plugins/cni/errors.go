package cni

import (
	"errors"
	"fmt"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
)

// ErrInvalidConfig is wrapped by errors about the plugin's own
// configuration (Config).
var ErrInvalidConfig = errors.New("cni: invalid configuration")

// ErrNoNetworkConfig means that the configuration directory holds no
// *.conflist, *.conf or *.json file.
var ErrNoNetworkConfig = errors.New("cni: no CNI network configuration")

// ErrNetworkNotFound means that no configuration file defines the network
// named in Config.Network.
var ErrNetworkNotFound = errors.New("cni: CNI network not found")

// ErrInvalidNetworkConfig is wrapped by errors about a CNI network
// configuration file: bad JSON, no plugins, an invalid name, or a plugin
// that does not support the file's cniVersion. The error names the file.
var ErrInvalidNetworkConfig = errors.New("cni: invalid CNI network configuration")

// ErrPluginNotFound means that a plugin type of the network has no
// executable in any of the binary directories.
var ErrPluginNotFound = errors.New("cni: CNI plugin executable not found")

// ErrNotConfigured is returned by handlers called before Configure loaded
// a network.
var ErrNotConfigured = errors.New("cni: no CNI network loaded yet")

// OpError is a failed CNI operation (ADD, DEL, CHECK) on a network. When a
// CNI plugin failed, Err wraps the plugin's *types.Error, and the message
// carries its code, message and details after libcni's description of the
// failing plugin:
//
//	CNI network "net1" ADD failed: plugin type="bridge" failed (add): code 11: no IP addresses available (details)
type OpError struct {
	Network string // the CNI network's name
	Op      string // "ADD", "DEL", "CHECK"
	Err     error  // libcni's error
}

func (e *OpError) Error() string {
	head := fmt.Sprintf("CNI network %q %s failed: ", e.Network, e.Op)
	var ce *types.Error
	if !errors.As(e.Err, &ce) {
		return head + e.Err.Error()
	}
	// libcni wraps the plugin's error as `plugin type="bridge" failed
	// (add): <msg>; <details>`: keep the part naming the plugin and spell
	// out the error's fields.
	full := e.Err.Error()
	if prefix, ok := strings.CutSuffix(full, ce.Error()); ok {
		full = strings.TrimSuffix(prefix, ": ")
	}
	if full != "" {
		head += full + ": "
	}
	s := fmt.Sprintf("%scode %d: %s", head, ce.Code, ce.Msg)
	if ce.Details != "" {
		s += " (" + ce.Details + ")"
	}
	return s
}

func (e *OpError) Unwrap() error { return e.Err }

// CNIError returns the CNI plugin's error, if a plugin failed.
func (e *OpError) CNIError() (*types.Error, bool) {
	var ce *types.Error
	ok := errors.As(e.Err, &ce)
	return ce, ok
}

// IsNetworkLoadError reports whether err is about the CNI network
// configuration rather than the plugin's own: no configuration file, no
// file for the named network, a file that does not load, or a plugin
// executable that is missing. Such errors go away when the network's
// installer has written its configuration and plugins; WaitForNetwork
// waits for that.
func IsNetworkLoadError(err error) bool {
	return errors.Is(err, ErrNoNetworkConfig) || errors.Is(err, ErrNetworkNotFound) ||
		errors.Is(err, ErrInvalidNetworkConfig) || errors.Is(err, ErrPluginNotFound)
}
