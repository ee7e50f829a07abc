package api

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Versions reported when the NRI version of a peer is not known.
const (
	// UnknownVersion is reported when no version could be found.
	UnknownVersion = "0.0.0-unknown"
	// DevelVersion is the version Go's build information gives a module
	// built from a working tree.
	DevelVersion = "(devel)"
)

// nriSince lists, per runtime, the releases from which on the runtime
// shipped a given NRI version, in ascending order of release. A release
// uses the NRI version of the last entry at or below it.
var nriSince = map[string][]struct{ release, nri string }{
	"containerd": {
		{"v1.7.0", "v0.3.0"},
		{"v1.7.7", "v0.4.0"},
		{"v1.7.14", "v0.6.0"},
		{"v1.7.16", "v0.6.1"},
		{"v1.7.26", "v0.8.0"},
		{"v2.2.0", "v0.10.0"},
		{"v2.2.1", "v0.11.0"},
	},
	"cri-o": {
		{"v1.26.0", "v0.2.0"},
		{"v1.26.2", "v0.3.0"},
		{"v1.26.4", "v0.3.1-0.20230504231226-94185418e253"},
		{"v1.27.0", "v0.3.0"},
		{"v1.27.1", "v0.3.1-0.20230504231226-94185418e253"},
		{"v1.29.0", "v0.5.0"},
		{"v1.29.2", "v0.6.0"},
		{"v1.31.0", "v0.6.1"},
		{"v1.32.0", "v0.9.0"},
		{"v1.33.0", "v0.9.1-0.20250219030224-e597e7849f24"},
		{"v1.34.0", "v0.10.0"},
		{"v1.35.0", "v0.11.0"},
	},
}

// InferVersionFromRuntime returns the NRI version a runtime release most
// likely uses, for peers that do not report theirs: the version shipped
// with the closest known release at or below runtimeVersion ("v2.1.3",
// "v1.31.0-rc.1", or a git description such as "v2.2.0-225-ge9dc15b7a",
// read as v2.2.0; the "v" may be left out, as CRI-O does, where upstream
// fails). runtime is "containerd" or "cri-o". It returns UnknownVersion
// and an error for another runtime, an unparsable version or a release
// older than any known one.
func InferVersionFromRuntime(runtime, runtimeVersion string) (string, error) {
	table, ok := nriSince[runtime]
	if !ok {
		return UnknownVersion, fmt.Errorf("api: cannot infer the NRI version of unknown runtime %q", runtime)
	}
	version := runtimeVersion
	if !strings.HasPrefix(version, "v") {
		version = "v" + version
	}
	v, err := parseSemver(gitSuffix.ReplaceAllString(version, ""))
	if err != nil {
		return UnknownVersion, fmt.Errorf("api: cannot infer the NRI version of %s %q: %w", runtime, runtimeVersion, err)
	}
	found := ""
	for _, e := range table {
		if compareSemver(mustParseSemver(e.release), v) > 0 {
			break
		}
		found = e.nri
	}
	if found == "" {
		return UnknownVersion, fmt.Errorf("api: cannot infer the NRI version of %s %q: older than any known release", runtime, runtimeVersion)
	}
	return found, nil
}

// gitSuffix matches the suffix git describe appends to a tag:
// "-<commits>-g<hash>", maybe followed by ".m" or "-dirty".
var gitSuffix = regexp.MustCompile(`-[0-9]+-g[0-9a-f]+(\.m|-dirty)?$`)

// semver is a parsed "vMAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]".
type semver struct {
	core [3]uint64
	pre  []string
}

// parseSemver parses a version with a "v" prefix; missing minor and patch
// numbers count as 0 when there is no prerelease.
func parseSemver(s string) (semver, error) {
	rest, ok := strings.CutPrefix(s, "v")
	if !ok {
		return semver{}, fmt.Errorf("version %q: no \"v\" prefix", s)
	}
	rest, _, _ = strings.Cut(rest, "+")
	core, pre, hasPre := strings.Cut(rest, "-")
	parts := strings.Split(core, ".")
	if len(parts) > 3 || (hasPre && len(parts) != 3) {
		return semver{}, fmt.Errorf("version %q: want vMAJOR.MINOR.PATCH", s)
	}
	var v semver
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return semver{}, fmt.Errorf("version %q: %q is not a number", s, p)
		}
		v.core[i] = n
	}
	if hasPre {
		if pre == "" {
			return semver{}, fmt.Errorf("version %q: empty prerelease", s)
		}
		v.pre = strings.Split(pre, ".")
	}
	return v, nil
}

func mustParseSemver(s string) semver {
	v, err := parseSemver(s)
	if err != nil {
		panic(err)
	}
	return v
}

// compareSemver orders versions by semantic versioning precedence.
func compareSemver(a, b semver) int {
	if c := slices.Compare(a.core[:], b.core[:]); c != 0 {
		return c
	}
	switch {
	case a.pre == nil && b.pre == nil:
		return 0
	case a.pre == nil:
		return 1 // a release follows its prereleases
	case b.pre == nil:
		return -1
	}
	for i := range min(len(a.pre), len(b.pre)) {
		if c := comparePre(a.pre[i], b.pre[i]); c != 0 {
			return c
		}
	}
	return len(a.pre) - len(b.pre)
}

// comparePre orders prerelease identifiers: numeric ones numerically and
// below alphanumeric ones, which compare as strings.
func comparePre(a, b string) int {
	na, errA := strconv.ParseUint(a, 10, 64)
	nb, errB := strconv.ParseUint(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		switch {
		case na < nb:
			return -1
		case na > nb:
			return 1
		}
		return 0
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}
