package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
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

// TestStartMultinetwork: with -multinetwork the DRA driver registers in
// -kubelet-dir's plugins_registry and serves in plugins/podnet.nrinet.io.
func TestStartMultinetwork(t *testing.T) {
	kubeletDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(kubeletDir, "plugins_registry"), 0o750); err != nil {
		t.Fatal(err)
	}
	cfg, err := multinet.FromBytes([]byte(`{"stateDir": "` + t.TempDir() + `", "networks": [{"name": "nic", "kind": "host", "interface": "nrnotthere0"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "n1-uid"}})
	plan := &clusterPlan{multinet: &cfg, client: client, nodeName: "n1", kubeletDir: kubeletDir}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sec, err := startMultinetwork(ctx, plan, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer sec.Stop()
	for _, f := range []string{"plugins_registry/podnet.nrinet.io-reg.sock", "plugins/podnet.nrinet.io/dra.sock"} {
		if fi, err := os.Stat(filepath.Join(kubeletDir, f)); err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Errorf("%s: %v, %v; want a socket", f, fi, err)
		}
	}
	if len(sec.options()) != 1 {
		t.Error("no plugin option for the secondary networks")
	}
}

// TestMultinetworkFile: -uninstall reads -multinetwork without -kube,
// and a bad file is a usage error naming the flag and the file, before
// anything is removed.
func TestMultinetworkFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`{"stateDir": "/x", "networks": [{"name": "blue", "kind": "bridge", "bridge": "b0", "subnets": ["198.18.100.0/24"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"stateDir": "/x", "networks": [{"name": "blue", "kind": "bridge", "bridge": "b0", "subnets": ["198.18.100.0/24", "198.18.101.0/24"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := multinetworkFile(good); err != nil || cfg == nil || cfg.Networks[0].Bridge != "b0" {
		t.Errorf("multinetworkFile(good) = %+v, %v", cfg, err)
	}
	_, err := multinetworkFile(bad)
	if err == nil || cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), `-multinetwork "`+bad+`"`) || !strings.Contains(err.Error(), "at most one IPv4 and one IPv6 subnet") {
		t.Errorf("multinetworkFile(bad) = %v (exit status %d); want a usage error naming the flag, the file and the subnets", err, cli.ExitCode(err))
	}
	if cfg, err := multinetworkFile(""); cfg != nil || err != nil {
		t.Errorf("no -multinetwork: %v, %v", cfg, err)
	}
}
