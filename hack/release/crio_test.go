package main

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// crioConfig is what the tests read of a CRI-O configuration.
type crioConfig struct {
	Crio struct {
		Network map[string]any `toml:"network"`
		NRI     map[string]any `toml:"nri"`
	} `toml:"crio"`
}

func parseCrioConfig(t testing.TB, b []byte) (crioConfig, map[string]any) {
	t.Helper()
	var c crioConfig
	var all map[string]any
	if err := toml.Unmarshal(b, &c); err != nil {
		t.Fatalf("TOML: %v\n%s", err, b)
	}
	if err := toml.Unmarshal(b, &all); err != nil {
		t.Fatalf("TOML: %v\n%s", err, b)
	}
	return c, all
}

func TestContribCrioDropIn(t *testing.T) {
	// What docs/crio.md says an operator writes: network mode nri with
	// podnet required, NRI on; nothing else.
	c, all := parseCrioConfig(t, contrib(t, "nrinet-network-mode.conf"))
	if len(all) != 1 || len(all["crio"].(map[string]any)) != 2 {
		t.Errorf("nrinet-network-mode.conf sets %v, want only [crio.network] and [crio.nri]", all)
	}
	n := c.Crio.Network
	if n["network_mode"] != "nri" || !slices.Equal(n["required_network_plugins"].([]any), []any{"podnet"}) || len(n) != 2 {
		t.Errorf("[crio.network] = %v, want network_mode nri and podnet required", n)
	}
	if c.Crio.NRI["enable_nri"] != true || len(c.Crio.NRI) != 1 {
		t.Errorf("[crio.nri] = %v, want enable_nri = true alone", c.Crio.NRI)
	}
}

// cachedCrio finds a static CRI-O on nrinet that make release or make
// install-crio built for this machine (hack/crio.sh with
// NRINET_CRIO_STATIC=1, in NRINET_CONTAINERD_CACHE's release/): the
// newest. Nothing is built: "" if there is none.
func cachedCrio(t testing.TB) string {
	t.Helper()
	cache := cmp.Or(os.Getenv("NRINET_CONTAINERD_CACHE"), "/var/cache/nrinet")
	found, _ := filepath.Glob(filepath.Join(cache, "release", "crio-"+crioVersion+"-*", "bin-static-"+runtime.GOARCH, "crio"))
	newest, newestTime := "", int64(0)
	for _, f := range found {
		if strings.Contains(f, "-upstream"+string(filepath.Separator)) {
			continue
		}
		if info, err := os.Stat(f); err == nil && info.Mode()&0o111 != 0 && info.ModTime().UnixNano() > newestTime {
			newest, newestTime = f, info.ModTime().UnixNano()
		}
	}
	return newest
}

// TestCrioConfig runs a CRI-O on nrinet from the release cache (skipped
// when none is built) over contrib's drop-in.
func TestCrioConfig(t *testing.T) {
	crio := cachedCrio(t)
	if crio == "" {
		t.Skip("no static CRI-O on nrinet in the release cache (make install-crio or make release)")
	}
	t.Logf("crio: %s", crio)
	checkCrioConfig(t, crio, contrib(t, "nrinet-network-mode.conf"))
}

// checkCrioConfig checks with `crio config` what CRI-O makes of the
// drop-in in its crio.conf.d, over an empty crio.conf, both in a
// temporary directory: network mode nri with podnet required and NRI on;
// without the drop-in (switching back), network mode cni (the default)
// and nothing required.
func checkCrioConfig(t *testing.T, crio string, dropIn []byte) {
	t.Helper()
	dir := t.TempDir()
	confD := filepath.Join(dir, "crio.conf.d")
	writeTree(t, dir, map[string]string{"crio.conf": ""})
	if err := os.MkdirAll(confD, 0o755); err != nil {
		t.Fatal(err)
	}
	config := func(t *testing.T) crioConfig {
		t.Helper()
		cmd := exec.Command(crio, "--config", filepath.Join(dir, "crio.conf"), "--config-dir", confD, "config")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("crio config: %v\n%s", err, stderr.String())
		}
		c, _ := parseCrioConfig(t, out)
		return c
	}
	t.Run("with the drop-in", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(confD, "nrinet-network-mode.conf"), dropIn, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(filepath.Join(confD, "nrinet-network-mode.conf")) })
		c := config(t)
		if got := c.Crio.Network["network_mode"]; got != "nri" {
			t.Errorf("network_mode = %v, want nri (from the drop-in)", got)
		}
		if got, _ := c.Crio.Network["required_network_plugins"].([]any); !slices.Equal(got, []any{"podnet"}) {
			t.Errorf("required_network_plugins = %v, want [podnet]", c.Crio.Network["required_network_plugins"])
		}
		// crio config comments out what is at its default; enable_nri's is true.
		if v, ok := c.Crio.NRI["enable_nri"]; ok && v != true {
			t.Errorf("enable_nri = %v, want true", v)
		}
	})
	t.Run("switched back", func(t *testing.T) {
		c := config(t)
		if got, ok := c.Crio.Network["network_mode"]; ok && got != "cni" {
			t.Errorf("network_mode = %v, want cni (the default) without the drop-in", got)
		}
		if got, _ := c.Crio.Network["required_network_plugins"].([]any); len(got) != 0 {
			t.Errorf("required_network_plugins = %v, want none", got)
		}
	})
}
