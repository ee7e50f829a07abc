package pins

import (
	"bufio"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
)

//go:embed versions.env
var versionsEnv string

// The pinned versions, from versions.env.
var (
	Kubernetes       = mustGet("KUBERNETES_VERSION")
	Etcd             = mustGet("ETCD_VERSION")
	CoreDNS          = mustGet("COREDNS_VERSION")
	Containerd       = mustGet("CONTAINERD_VERSION")
	CRIO             = mustGet("CRIO_VERSION")
	NRI              = mustGet("NRI_VERSION")
	CRITools         = mustGet("CRI_TOOLS_VERSION")
	CNIPlugins       = mustGet("CNI_PLUGINS_VERSION")
	PrometheusModule = mustGet("PROMETHEUS_MODULE_VERSION")
)

// versionRE is what a pinned version looks like: a release, no pre-release
// or build suffix.
var versionRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// Parse reads a versions file: KEY=value lines, blank lines and lines
// starting with # ignored. Every value must be a semantic version
// (vMAJOR.MINOR.PATCH) and every key unique.
func Parse(text string) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		switch {
		case !ok || key == "" || strings.ContainsAny(line, " \t\"'$"):
			return nil, fmt.Errorf("versions line %d %q: want KEY=value, no quotes or spaces", n, line)
		case !versionRE.MatchString(value):
			return nil, fmt.Errorf("versions line %d: %s=%q is not a version vX.Y.Z", n, key, value)
		case m[key] != "":
			return nil, fmt.Errorf("versions line %d: %s again (first %s)", n, key, m[key])
		}
		m[key] = value
	}
	return m, sc.Err()
}

// All returns every pinned version by its key in versions.env.
func All() map[string]string {
	m, err := Parse(versionsEnv)
	if err != nil {
		panic("internal/pins: versions.env: " + err.Error())
	}
	return m
}

// mustGet returns key's version; versions.env is part of the binary, so a
// missing key is a build defect, found by any test that imports pins.
func mustGet(key string) string {
	v, ok := All()[key]
	if !ok {
		panic("internal/pins: versions.env has no " + key)
	}
	return v
}
