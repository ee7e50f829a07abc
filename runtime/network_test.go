package runtime

import (
	"errors"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
)

// TestNormalizePluginNetwork_NamesPluginAndValue checks that what
// api.NormalizeNetwork rejects reaches the runtime's caller as a
// *PluginError naming the plugin and the value, wrapping
// api.ErrInvalidNetwork.
func TestNormalizePluginNetwork_NamesPluginAndValue(t *testing.T) {
	itf := func(name string, addrs ...string) *api.NetworkInterface {
		return &api.NetworkInterface{Name: name, Addresses: addrs}
	}
	for _, tc := range []struct {
		name string
		net  *api.PodSandboxNetwork
		want string
	}{
		{"duplicate IP", &api.PodSandboxNetwork{Ips: []string{"198.18.0.5", "198.18.0.5/24"}}, `"198.18.0.5/24"`},
		{"same IP on two interfaces", &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{
			itf("eth0", "fd00:198:18::5/64"), itf("eth1", "fd00:198:18::5/64"),
		}}, `interface "eth1": address "fd00:198:18::5/64"`},
		{"limited broadcast", &api.PodSandboxNetwork{Ips: []string{"255.255.255.255"}}, `"255.255.255.255"`},
		{"network address", &api.PodSandboxNetwork{Interfaces: []*api.NetworkInterface{itf("eth0", "198.18.0.0/24")}}, `"198.18.0.0/24"`},
		{"link-local", &api.PodSandboxNetwork{Ips: []string{"169.254.0.7"}}, `"169.254.0.7"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := normalizePluginNetwork("10-liar", "RunPodSandbox", tc.net)
			var perr *PluginError
			if !errors.As(err, &perr) || perr.Plugin != "10-liar" || !errors.Is(err, api.ErrInvalidNetwork) ||
				!strings.Contains(err.Error(), `plugin "10-liar"`) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want an invalid-network error from 10-liar naming %s", err, tc.want)
			}
		})
	}
}
