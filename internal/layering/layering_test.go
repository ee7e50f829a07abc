package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// deps lists the packages pkg imports, directly or not.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestImportRules(t *testing.T) {
	const mod = "github.com/nrinet/nrinet/"
	forbiddenForLibraries := []string{
		"k8s.io/", "github.com/containernetworking/", "github.com/vishvananda/",
		"go.etcd.io/bbolt", "github.com/prometheus/", "google.golang.org/grpc/internal/transport",
	}
	for _, tc := range []struct {
		pkg       string
		forbidden []string
		onlyStd   bool
	}{
		{pkg: mod + "mux", onlyStd: true},
		{pkg: mod + "api", forbidden: append([]string{mod + "runtime", mod + "plugin", mod + "mux"}, forbiddenForLibraries...)},
		{pkg: mod + "runtime", forbidden: append([]string{mod + "plugin", mod + "cri", mod + "plugins/", mod + "ocispec", mod + "validator"}, forbiddenForLibraries...)},
		{pkg: mod + "merge", forbidden: append([]string{mod + "runtime", mod + "plugin", mod + "mux", mod + "ocispec"}, forbiddenForLibraries...)},
		{pkg: mod + "ocispec", forbidden: append([]string{mod + "runtime", mod + "plugin", mod + "mux", mod + "merge"}, forbiddenForLibraries...)},
		{pkg: mod + "validator", forbidden: append([]string{mod + "runtime", mod + "plugin", mod + "mux", mod + "ocispec"}, forbiddenForLibraries...)},
		{pkg: mod + "plugin", forbidden: append([]string{mod + "runtime", mod + "cri", mod + "plugins/"}, forbiddenForLibraries...)},
		{pkg: mod + "ipam", forbidden: []string{mod + "api", mod + "runtime", mod + "plugin", mod + "mux"}},
		{pkg: mod + "plugins/podnet", forbidden: []string{mod + "runtime", mod + "cri", "github.com/containernetworking/", "k8s.io/"}},
		{pkg: mod + "plugins/podnet/masq", forbidden: []string{mod + "runtime", mod + "cri", mod + "api", "k8s.io/", "github.com/vishvananda/"}},
		{pkg: mod + "plugins/podnet/hostport", forbidden: []string{mod + "runtime", mod + "cri", mod + "api", mod + "plugins/podnet/masq", "k8s.io/", "github.com/vishvananda/"}},
		{pkg: mod + "plugins/podnet/netpol", forbidden: []string{mod + "runtime", mod + "cri", mod + "api", mod + "plugins/podnet/masq", "k8s.io/client-go", "github.com/vishvananda/"}},
		{pkg: mod + "plugins/podnet/policies", forbidden: []string{mod + "runtime", mod + "cri", "github.com/containernetworking/"}},
		{pkg: mod + "plugins/podnet/multinet", forbidden: []string{mod + "runtime", mod + "cri", mod + "api", mod + "plugins/podnet/masq", "k8s.io/", "github.com/containernetworking/"}},
		{pkg: mod + "plugins/podnet/dra", forbidden: []string{mod + "runtime", mod + "cri", mod + "api", mod + "plugins/podnet/masq", "github.com/containernetworking/"}},
		{pkg: mod + "plugins/podnet/kube", forbidden: []string{mod + "runtime", mod + "cri", mod + "api", mod + "plugins/podnet/masq"}},
		{pkg: mod + "plugins/podnet/internal/reconcile", forbidden: []string{mod + "runtime", mod + "cri", mod + "api", mod + "plugins/podnet/netpol", mod + "plugins/podnet/policies", mod + "plugins/podnet/kube", "github.com/google/nftables", "github.com/vishvananda/"}},
		{pkg: mod + "plugins/cni", forbidden: []string{mod + "runtime", mod + "cri", "k8s.io/"}},
		{pkg: mod + "cmd/internal/pluginops", forbidden: []string{mod + "runtime", mod + "cri", mod + "plugins/", "k8s.io/"}},
		{pkg: mod + "cmd/internal/cli", onlyStd: true},
	} {
		t.Run(strings.TrimPrefix(tc.pkg, mod), func(t *testing.T) {
			for _, d := range deps(t, tc.pkg) {
				if tc.onlyStd && strings.Contains(strings.Split(d, "/")[0], ".") && d != tc.pkg {
					t.Errorf("%s imports %s; it may use the standard library only", tc.pkg, d)
				}
				for _, f := range tc.forbidden {
					if strings.HasPrefix(d, f) {
						t.Errorf("%s imports %s", tc.pkg, d)
					}
				}
			}
		})
	}
}
