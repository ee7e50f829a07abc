// Package version is the version every nrinet command reports (-version,
// logs, the runtime version nrinetd gives plugins and the kubelet).
//
// A release build sets it at link time:
//
//	go build -ldflags "-X github.com/nrinet/nrinet/internal/version.version=v1.2.3" ./cmd/...
//
// Without that, [String] takes it from the build information Go embeds in
// the binary: the main module's version (a tag, or a pseudo-version such as
// v0.0.0-20260101120000-0123456789ab+dirty when built in a VCS checkout
// with -buildvcs), else the VCS revision, else "devel".
package version

import (
	"runtime/debug"
)

// version is set with -ldflags "-X github.com/nrinet/nrinet/internal/version.version=...".
// It is a variable only because -X can set nothing else; nothing in the
// program writes it.
var version string

// Devel is what [String] returns when neither the linker nor the build
// information gives a version.
const Devel = "devel"

// String returns the version of the running binary: the one set with
// -ldflags -X, else the main module's version from the build information,
// else its VCS revision (12 hex digits, "+dirty" if the tree had changes),
// else [Devel].
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return resolve(version, info)
}

// resolve picks the version from what the linker set and the build
// information (nil if there is none).
func resolve(linked string, info *debug.BuildInfo) string {
	if linked != "" {
		return linked
	}
	if info == nil {
		return Devel
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return Devel
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
