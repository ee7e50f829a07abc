package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/cmd/internal/cli"
)

// TestReadMultinetwork: -multinetwork needs -kube; a bad file is a usage
// error naming the flag, the file and the value; a good one is read.
func TestReadMultinetwork(t *testing.T) {
	c := cli.New("nri-podnet", "test", "")
	for _, tc := range []struct {
		name, file string
		kube       bool
		wantErr    string
	}{
		{name: "good", kube: true, file: `{"stateDir": "/var/lib/x", "networks": [{"name": "blue", "kind": "bridge", "bridge": "b0", "subnets": ["198.18.100.0/24"]}]}`},
		{name: "without -kube", file: `{"stateDir": "/x", "networks": []}`, wantErr: "-multinetwork needs -kube"},
		{name: "a bad network", kube: true, file: `{"stateDir": "/x", "networks": [{"name": "blue", "kind": "vlan"}]}`, wantErr: `kind "vlan" is not bridge, macvlan or host`},
		{name: "not JSON", kube: true, file: `networks: []`, wantErr: "multinet: parsing configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "multinetwork.json")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := readMultinetwork(c, path, tc.kube)
			if tc.wantErr == "" {
				if err != nil || cfg == nil || len(cfg.Networks) != 1 {
					t.Fatalf("readMultinetwork = %+v, %v", cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v; want %q", err, tc.wantErr)
			}
			if code := cli.ExitCode(err); code != cli.ExitUsage {
				t.Errorf("exit status %d; want %d (usage)", code, cli.ExitUsage)
			}
			if tc.kube && !strings.Contains(err.Error(), `-multinetwork "`+path+`"`) {
				t.Errorf("err %v does not name the flag and the file", err)
			}
		})
	}
	if cfg, err := readMultinetwork(c, "", true); cfg != nil || err != nil {
		t.Errorf("no -multinetwork: %v, %v", cfg, err)
	}
}
