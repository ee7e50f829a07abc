package api

import (
	"fmt"
	"strings"

	nrinet "github.com/nrinet/nrinet/api"
)

// Environment variables through which a runtime tells the plugins it
// launches who they are and how to connect.
const (
	// PluginSocketEnvVar holds the file descriptor number of the
	// connection a runtime-launched plugin uses.
	PluginSocketEnvVar = nrinet.PluginSocketEnv
	// PluginNameEnvVar holds the name of a runtime-launched plugin.
	PluginNameEnvVar = nrinet.PluginNameEnv
	// PluginIdxEnvVar holds the index of a runtime-launched plugin.
	PluginIdxEnvVar = nrinet.PluginIdxEnv
)

// Default protocol timeouts.
const (
	// DefaultPluginRegistrationTimeout bounds how long a runtime waits
	// for a connected plugin to register.
	DefaultPluginRegistrationTimeout = nrinet.DefaultRegistrationTimeout
	// DefaultPluginRequestTimeout bounds how long a plugin may take to
	// handle one request.
	DefaultPluginRequestTimeout = nrinet.DefaultRequestTimeout
)

// CheckPluginName returns an error if name is not a valid plugin name: 1
// to nrinet.MaxPluginNameLen (128) bytes of ASCII letters, digits and
// "_.+-". Upstream allows the same characters without a length limit.
func CheckPluginName(name string) error {
	return nrinet.ValidatePluginName(name)
}

// CheckPluginIndex returns an error if idx is not a plugin index, two
// ASCII digits.
func CheckPluginIndex(idx string) error {
	return nrinet.ValidatePluginIndex(idx)
}

// ParsePluginName splits the full name of a plugin, "NN-name", at its
// first "-" into the index and the base name. As upstream, it checks the
// index only; check the name with CheckPluginName.
func ParsePluginName(name string) (idx, base string, err error) {
	idx, base, ok := strings.Cut(name, "-")
	if !ok {
		return "", "", fmt.Errorf("api: invalid plugin name %q: want \"NN-name\"", name)
	}
	if err := CheckPluginIndex(idx); err != nil {
		return "", "", fmt.Errorf("api: invalid plugin name %q: %w", name, err)
	}
	return idx, base, nil
}
