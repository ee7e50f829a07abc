package main

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/plugins/podnet"
	"github.com/nrinet/nrinet/plugins/podnet/kube"
)

// TestKubeConfig: with -kube, the configuration is -config's settings
// (readKubeFile, at start) with the Node's pod CIDRs as subnets
// (withPodCIDRs); a file that sets subnets or gateways, an unknown field
// or a bad value is refused, naming it.
func TestKubeConfig(t *testing.T) {
	cidrs := []netip.Prefix{netip.MustParsePrefix("198.18.1.0/24"), netip.MustParsePrefix("fd00:198:18:1::/64")}
	for _, tc := range []struct {
		name    string
		file    string // "" for no -config
		want    podnet.Config
		wantErr string
	}{
		{
			name: "no file: defaults",
			want: podnet.Config{Bridge: podnet.DefaultBridge, Subnets: []string{"198.18.1.0/24", "fd00:198:18:1::/64"}, MTU: podnet.DefaultMTU, StateDir: podnet.DefaultStateDir},
		},
		{
			name: "bridge, MTU, state and exclusions from the file",
			file: `{"bridge": "nrk0", "mtu": 1450, "stateDir": "/var/lib/x", "exclude": ["198.18.1.250/31"]}`,
			want: podnet.Config{Bridge: "nrk0", Subnets: []string{"198.18.1.0/24", "fd00:198:18:1::/64"}, Exclude: []string{"198.18.1.250/31"}, MTU: 1450, StateDir: "/var/lib/x"},
		},
		{name: "subnets in the file", file: `{"subnets": ["198.18.9.0/24"]}`, wantErr: `sets subnets ["198.18.9.0/24"]`},
		{name: "gateways in the file", file: `{"gateways": ["198.18.1.1"]}`, wantErr: "with -kube the subnets are Node n1's spec.podCIDRs"},
		{name: "unknown field", file: `{"bridges": "x"}`, wantErr: `unknown field "bridges"`},
		{name: "a bad MTU, refused at start", file: `{"mtu": 10}`, wantErr: `": podnet: MTU 10 is outside 68..65535`},
		{name: "a bad exclusion, refused at start", file: `{"exclude": ["198.18.1.0/33"]}`, wantErr: `exclude[0] "198.18.1.0/33"`},
		{name: "a bad logDenied rate, refused at start", file: `{"logDenied": {"rate": "10/sec", "group": 100}}`, wantErr: `logDenied: rate "10/sec"`},
		{name: "a bad logDenied group, refused at start", file: `{"logDenied": {"rate": "10/second", "group": 70000}}`, wantErr: `logDenied: group 70000`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = filepath.Join(t.TempDir(), "podnet.json")
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			file, err := readKubeFile(path, "n1")
			var got podnet.Config
			if err == nil {
				got, err = withPodCIDRs(file, path, "n1", cidrs)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Bridge != tc.want.Bridge || got.MTU != tc.want.MTU || got.StateDir != tc.want.StateDir ||
				!slices.Equal(got.Subnets, tc.want.Subnets) || !slices.Equal(got.Exclude, tc.want.Exclude) || len(got.Gateways) != 0 {
				t.Errorf("configuration = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The Watcher's kinds of reconcile are counted under the metrics' kinds.
func TestReconcileKinds(t *testing.T) {
	if kube.KindRoutes != podnet.ReconcileRoutes || kube.KindMasquerade != podnet.ReconcileMasquerade {
		t.Errorf("kube kinds %q, %q; podnet metrics kinds %q, %q", kube.KindRoutes, kube.KindMasquerade, podnet.ReconcileRoutes, podnet.ReconcileMasquerade)
	}
}

// TestCheckBrNetfilter: without br_netfilter's sysctl, -network-policy
// refuses to start, saying what to load and how to do without.
func TestCheckBrNetfilter(t *testing.T) {
	present := filepath.Join(t.TempDir(), "bridge-nf-call-iptables")
	if err := os.WriteFile(present, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkBrNetfilter(present); err != nil {
		t.Errorf("with the sysctl: %v", err)
	}
	err := checkBrNetfilter(filepath.Join(t.TempDir(), "missing"))
	for _, want := range []string{"modprobe br_netfilter", "-network-policy=false", "missing"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without the sysctl: %v, want an error containing %q", err, want)
		}
	}
}

// TestUninstallBridge: -uninstall reads -config as a start does, a file
// with subnets as a static configuration and one without as -kube's, and
// removes its bridge (the default without -config); any error is a usage
// error naming -config.
func TestUninstallBridge(t *testing.T) {
	for _, tc := range []struct {
		name, file string // file "": no -config
		kube       bool
		want       string
		wantErr    string
	}{
		{name: "no -config", want: podnet.DefaultBridge},
		{name: "static", file: `{"bridge": "nrs0", "subnets": ["198.18.0.0/24"]}`, want: "nrs0"},
		{name: "-kube's", file: `{"bridge": "nrk0", "mtu": 1450}`, want: "nrk0"},
		{name: "-kube's, the default bridge", file: `{"stateDir": "/var/lib/x"}`, want: podnet.DefaultBridge},
		{name: "-kube's, with -kube", file: `{"bridge": "nrk0"}`, kube: true, want: "nrk0"},
		{name: "static, with -kube", file: `{"bridge": "nrs0", "subnets": ["198.18.0.0/24"]}`, kube: true, wantErr: "with -kube the subnets are Node n1's spec.podCIDRs"},
		{name: "unknown key", file: `{"bridg": "nrs0", "subnets": ["198.18.0.0/24"]}`, wantErr: `unknown field "bridg"`},
		{name: "bad CIDR", file: `{"subnets": ["198.18.0.0/33"]}`, wantErr: `subnets[0] "198.18.0.0/33"`},
		{name: "bad gateway", file: `{"subnets": ["198.18.0.0/24"], "gateways": ["198.18.9.1"]}`, wantErr: "gateway 198.18.9.1 is outside every subnet"},
		{name: "bad bridge name", file: `{"bridge": "a/b"}`, wantErr: `bridge name "a/b"`},
		{name: "malformed", file: `{"bridge": `, wantErr: "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = filepath.Join(t.TempDir(), "podnet.json")
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := uninstallBridge(path, tc.kube, "n1")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), `-config "`+path+`": `) || cli.ExitCode(err) != cli.ExitUsage {
					t.Fatalf("uninstallBridge = %q, %v (exit status %d); want a usage error with %q", got, err, cli.ExitCode(err), tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("uninstallBridge = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
