package api

import (
	"fmt"
	"strconv"
	"strings"
)

// Well-known locations and environment variables of NRI plugins.
const (
	// DefaultSocketPath is the unix socket external plugins connect to.
	DefaultSocketPath = "/var/run/nri/nri.sock"
	// DefaultPluginPath is the directory of pre-installed plugin
	// executables, named "NN-name" (see ParsePluginFileName).
	DefaultPluginPath = "/opt/nri/plugins"
	// DefaultPluginConfigPath is the directory of pre-installed plugin
	// configuration files.
	DefaultPluginConfigPath = "/etc/nri/conf.d"

	// PluginSocketEnv names the environment variable holding the file
	// descriptor number of the connection a runtime-launched plugin uses.
	PluginSocketEnv = "NRI_PLUGIN_SOCKET"
	// PluginNameEnv names the environment variable holding the name of a
	// runtime-launched plugin.
	PluginNameEnv = "NRI_PLUGIN_NAME"
	// PluginIdxEnv names the environment variable holding the index of a
	// runtime-launched plugin.
	PluginIdxEnv = "NRI_PLUGIN_IDX"
)

// MaxPluginNameLen is the longest plugin name, in bytes. Upstream NRI
// (containerd/nri v0.12.5) allows the same characters but sets no bound;
// 128 is about four times the longest name in use (nri-plugins' names
// are under 40), keeps every log line, metric label, owner record and
// error that carries a name small, and leaves "NN-name.conf" well under
// the 255-byte file name limit.
const MaxPluginNameLen = 128

// ValidatePluginName checks that name is a usable plugin name: 1 to
// MaxPluginNameLen bytes, made only of ASCII letters, digits and the
// characters "_.+-" (so printable, without white space).
func ValidatePluginName(name string) error {
	if reason := checkPluginName(name); reason != "" {
		return fmt.Errorf("api: invalid plugin name %s: %s", quoteName(name), reason)
	}
	return nil
}

// quoteName quotes a name for an error message, cut short if it is longer
// than any valid name.
func quoteName(name string) string {
	if len(name) > MaxPluginNameLen {
		return strconv.Quote(name[:32]) + "..."
	}
	return strconv.Quote(name)
}

// ValidatePluginIndex checks that idx is a plugin index: exactly two ASCII
// digits, "00" to "99".
func ValidatePluginIndex(idx string) error {
	if reason := checkPluginIndex(idx); reason != "" {
		return fmt.Errorf("api: invalid plugin index %q: %s", idx, reason)
	}
	return nil
}

// ParsePluginFileName splits the file name of a pre-installed plugin,
// "NN-name", into its index and name. The split happens at the first '-',
// so the name itself may contain dashes. Both parts are validated.
func ParsePluginFileName(base string) (idx, name string, err error) {
	idx, name, ok := strings.Cut(base, "-")
	var reason string
	switch {
	case !ok:
		reason = `want "NN-name"`
	case checkPluginIndex(idx) != "":
		reason = "index " + checkPluginIndex(idx)
	case checkPluginName(name) != "":
		reason = "name " + checkPluginName(name)
	}
	if reason != "" {
		return "", "", fmt.Errorf("api: invalid plugin file name %q: %s", base, reason)
	}
	return idx, name, nil
}

// FullPluginName returns the combined "NN-name" form of a plugin index and
// name, as used in logs and in pre-installed plugin file names.
func FullPluginName(idx, name string) string {
	return idx + "-" + name
}

// checkPluginName returns why name is not a valid plugin name, or "".
func checkPluginName(name string) string {
	if name == "" {
		return "must not be empty"
	}
	if len(name) > MaxPluginNameLen {
		return fmt.Sprintf("%d bytes, more than the limit of %d", len(name), MaxPluginNameLen)
	}
	for i, r := range name {
		if !isNameChar(r) {
			return fmt.Sprintf("invalid character %q at offset %d", r, i)
		}
	}
	return ""
}

// checkPluginIndex returns why idx is not a valid plugin index, or "".
func checkPluginIndex(idx string) string {
	if len(idx) != 2 || !isDigit(idx[0]) || !isDigit(idx[1]) {
		return "must be two digits"
	}
	return ""
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isNameChar(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return strings.ContainsRune("_.+-", r)
}
