package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// contrib reads a file of contrib/, the sources of what make install and
// the tarballs ship.
func contrib(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "contrib", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// unitFile is a systemd unit read as systemd does for what the tests
// check: sections of keys, each key with its values in order.
type unitFile map[string]map[string][]string

func parseUnit(t testing.TB, b []byte) unitFile {
	t.Helper()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			if _, dup := u[section]; dup {
				t.Errorf("line %d: section [%s] twice", n, section)
			}
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Errorf("line %d: %q is not key=value in a section", n, line)
				continue
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

// one returns the single value of key in section, failing the test if it
// has none or several.
func (u unitFile) one(t testing.TB, section, key string) string {
	t.Helper()
	v := u[section][key]
	if len(v) != 1 {
		t.Errorf("[%s] %s = %q, want one value", section, key, v)
		return ""
	}
	return v[0]
}

// checkUnit checks a unit's shape: the three sections, a Type=notify
// service whose ExecStart runs bindir/<command>, restarted always, wanted
// by multi-user.target; and, where systemd-analyze is installed, that
// `systemd-analyze verify` has nothing to say about it (the command is
// replaced by an empty script, since verify wants it to exist).
func checkUnit(t *testing.T, name string, b []byte, bindir, command string) unitFile {
	t.Helper()
	u := parseUnit(t, b)
	for _, s := range []string{"Unit", "Service", "Install"} {
		if _, ok := u[s]; !ok {
			t.Errorf("%s: no [%s] section", name, s)
		}
	}
	if got := u.one(t, "Service", "Type"); got != "notify" {
		t.Errorf("%s: Type=%s, want notify (the daemon sends READY=1)", name, got)
	}
	exec0 := strings.Fields(u.one(t, "Service", "ExecStart"))
	if len(exec0) == 0 || exec0[0] != bindir+"/"+command {
		t.Errorf("%s: ExecStart=%q, want %s/%s first", name, exec0, bindir, command)
	}
	if got := u.one(t, "Service", "Restart"); got != "always" {
		t.Errorf("%s: Restart=%s, want always", name, got)
	}
	if got := u.one(t, "Install", "WantedBy"); got != "multi-user.target" {
		t.Errorf("%s: WantedBy=%s, want multi-user.target", name, got)
	}
	t.Run("systemd-analyze "+name, func(t *testing.T) {
		sa, err := exec.LookPath("systemd-analyze")
		if err != nil {
			t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd)")
		}
		dir := t.TempDir()
		fake := filepath.Join(dir, "bin")
		if err := os.MkdirAll(fake, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fake, command), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		unit := filepath.Join(dir, name)
		if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(b), bindir+"/"+command, fake+"/"+command)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(sa, "verify", unit).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
		}
	})
	return u
}

func TestContribUnits(t *testing.T) {
	t.Run("nrinetd.service", func(t *testing.T) {
		u := checkUnit(t, "nrinetd.service", contrib(t, "nrinetd.service"), "/usr/local/bin", "nrinetd")
		// No -config: nrinetd reads /etc/nrinetd/config.toml if it
		// exists, so the unit starts on the defaults without one.
		if got := u.one(t, "Service", "ExecStart"); got != "/usr/local/bin/nrinetd" {
			t.Errorf("ExecStart=%s, want /usr/local/bin/nrinetd alone", got)
		}
	})
	t.Run("containerd.service", func(t *testing.T) {
		u := checkUnit(t, "containerd.service", contrib(t, "containerd.service"), "/usr/local/bin", "containerd")
		for key, want := range map[string]string{
			"KillMode":       "process", // the shims, and the containers, outlive a restart
			"Delegate":       "yes",     // containerd manages the cgroups below its own
			"OOMScoreAdjust": "-999",
			"LimitNOFILE":    "",
		} {
			if want == "" {
				if v, ok := u["Service"][key]; ok {
					t.Errorf("%s=%q set; containerd's own default is wanted", key, v)
				}
				continue
			}
			if got := u.one(t, "Service", key); got != want {
				t.Errorf("%s=%s, want %s", key, got, want)
			}
		}
		// containerd finds its shim in PATH: the one beside it first.
		env := u.one(t, "Service", "Environment")
		path, ok := strings.CutPrefix(env, "PATH=")
		if !ok || strings.Split(path, ":")[0] != "/usr/local/bin" {
			t.Errorf("Environment=%s, want PATH=/usr/local/bin first", env)
		}
	})
	t.Run("crio.service", func(t *testing.T) {
		u := checkUnit(t, "crio.service", contrib(t, "crio.service"), "/usr/local/bin", "crio")
		// CRI-O's own unit's settings (contrib/systemd/crio.service of
		// v1.36.3) that matter to a node: the watchdog CRI-O pings, no
		// OOM kill, and the options /etc/sysconfig/crio may set.
		for key, want := range map[string]string{
			"WatchdogSec":     "60s",
			"OOMScoreAdjust":  "-999",
			"TasksMax":        "infinity",
			"EnvironmentFile": "-/etc/sysconfig/crio",
			"ExecReload":      "/bin/kill -s HUP $MAINPID",
		} {
			if got := u.one(t, "Service", key); got != want {
				t.Errorf("%s=%s, want %s", key, got, want)
			}
		}
		if got := u.one(t, "Service", "ExecStart"); !strings.HasSuffix(got, " $CRIO_CONFIG_OPTIONS $CRIO_RUNTIME_OPTIONS $CRIO_STORAGE_OPTIONS $CRIO_NETWORK_OPTIONS $CRIO_METRICS_OPTIONS") {
			t.Errorf("ExecStart=%s, want CRI-O's option variables", got)
		}
		// CRI-O finds pinns, conmon and crun in PATH: the pinns beside it
		// first.
		if got := unitPath(t, u); strings.Split(got, ":")[0] != "/usr/local/bin" {
			t.Errorf("PATH=%s, want /usr/local/bin first", got)
		}
		if got := u.one(t, "Install", "Alias"); got != "cri-o.service" {
			t.Errorf("Alias=%s, want cri-o.service (as CRI-O's unit)", got)
		}
	})
}

// unitPath returns the PATH a unit's Environment= lines set.
func unitPath(t testing.TB, u unitFile) string {
	t.Helper()
	for _, env := range u["Service"]["Environment"] {
		if p, ok := strings.CutPrefix(env, "PATH="); ok {
			return p
		}
	}
	t.Errorf("no Environment=PATH=...")
	return ""
}

// containerdConfig is what the tests read of a containerd configuration.
type containerdConfig struct {
	Version int                       `toml:"version"`
	Imports []string                  `toml:"imports"`
	Plugins map[string]map[string]any `toml:"plugins"`
}

func parseContainerdConfig(t testing.TB, b []byte) containerdConfig {
	t.Helper()
	var c containerdConfig
	if err := toml.Unmarshal(b, &c); err != nil {
		t.Fatalf("TOML: %v\n%s", err, b)
	}
	return c
}

const (
	criRuntime = "io.containerd.cri.v1.runtime"
	nriPlugin  = "io.containerd.nri.v1.nri"
	confDGlob  = "/etc/containerd/conf.d/*.toml"
)

func TestContribContainerdConfig(t *testing.T) {
	c := parseContainerdConfig(t, contrib(t, "containerd-config.toml"))
	if c.Version != 3 || !slices.Equal(c.Imports, []string{confDGlob}) || len(c.Plugins) != 0 {
		t.Errorf("containerd-config.toml: version %d, imports %q, plugins %v; want version 3 (containerd v2.0 on), only the conf.d import", c.Version, c.Imports, c.Plugins)
	}
	d := parseContainerdConfig(t, contrib(t, "nrinet-network-mode.toml"))
	if d.Version != 3 || len(d.Imports) != 0 {
		t.Errorf("nrinet-network-mode.toml: version %d, imports %q; want version 3 (else it is read as version 1), no imports", d.Version, d.Imports)
	}
	if got := d.Plugins[criRuntime]; len(got) != 1 || got["network_mode"] != "nri" {
		t.Errorf("nrinet-network-mode.toml: [plugins.%q] = %v, want network_mode = nri alone", criRuntime, got)
	}
	n := d.Plugins[nriPlugin]
	if n["disable"] != false || n["socket_path"] != "/var/run/nri/nri.sock" || !slices.Equal(n["required_network_plugins"].([]any), []any{"podnet"}) || len(n) != 3 {
		t.Errorf("nrinet-network-mode.toml: [plugins.%q] = %v", nriPlugin, n)
	}
	if len(d.Plugins) != 2 {
		t.Errorf("nrinet-network-mode.toml sets plugins %v, want only the CRI runtime's and NRI's", d.Plugins)
	}
}

func TestContribNrinetdConfig(t *testing.T) {
	// cmd/nrinetd's tests parse it; here only that it is what the unit
	// and the docs name: a TOML file that nrinetd reads as config.toml.
	var m map[string]any
	if err := toml.Unmarshal(contrib(t, "nrinetd.toml"), &m); err != nil || m["cri_socket"] == nil {
		t.Errorf("nrinetd.toml: %v, %v", m, err)
	}
}

// cachedContainerd finds a containerd on nrinet that hack/containerd.sh
// built for this machine: NRINET_CONTAINERD_BIN if set, else the newest
// in the cache (NRINET_CONTAINERD_CACHE, default /var/cache/nrinet, and
// its release/ for make release's static builds), stock builds left out.
// Nothing is built: "" if there is none.
func cachedContainerd(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("NRINET_CONTAINERD_BIN"); bin != "" {
		return filepath.Join(bin, "containerd")
	}
	cache := os.Getenv("NRINET_CONTAINERD_CACHE")
	if cache == "" {
		cache = "/var/cache/nrinet"
	}
	var found []string
	for _, pattern := range []string{
		filepath.Join(cache, "containerd-"+containerdVersion+"-*", "bin", "containerd"),
		filepath.Join(cache, "release", "containerd-"+containerdVersion+"-*", "bin-static-"+runtime.GOARCH, "containerd"),
	} {
		m, _ := filepath.Glob(pattern)
		found = append(found, m...)
	}
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

// TestContainerdConfigDump runs a containerd on nrinet from the cache
// (skipped when none is built) over contrib's config.toml and drop-in.
func TestContainerdConfigDump(t *testing.T) {
	containerd := cachedContainerd(t)
	if containerd == "" {
		t.Skip("no containerd on nrinet in the cache (make containerd, or NRINET_CONTAINERD_BIN)")
	}
	t.Logf("containerd: %s", containerd)
	checkConfigDump(t, containerd, contrib(t, "containerd-config.toml"), contrib(t, "nrinet-network-mode.toml"))
}

// checkConfigDump checks with `containerd config dump` what containerd
// makes of config (the shipped config.toml) with the drop-in in its
// conf.d, both moved to a temporary directory:
//
//   - with the drop-in: network mode nri, NRI on with podnet required,
//     and the operator's own keys kept, in the drop-in's tables too (an
//     imported file replaces the keys it sets, not whole tables);
//   - without it (switching back): network mode cni (the default), nothing
//     required, the operator's keys still there.
func checkConfigDump(t *testing.T, containerd string, config, dropIn []byte) {
	t.Helper()
	dir := t.TempDir()
	confD := filepath.Join(dir, "conf.d")
	if err := os.MkdirAll(confD, 0o755); err != nil {
		t.Fatal(err)
	}
	main := strings.ReplaceAll(string(config), confDGlob, filepath.Join(confD, "*.toml"))
	if main == string(config) {
		t.Fatalf("config.toml does not name %s", confDGlob)
	}
	// The operator's own settings, in tables the drop-in sets keys of.
	main += `
[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = true

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  SystemdCgroup = true

[plugins."io.containerd.nri.v1.nri"]
  plugin_request_timeout = "7s"
`
	configPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(configPath, []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	dump := func(t *testing.T) containerdConfig {
		t.Helper()
		cmd := exec.Command(containerd, "--config", configPath, "config", "dump")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("containerd config dump: %v\n%s", err, stderr.String())
		}
		return parseContainerdConfig(t, out)
	}
	runc := func(c containerdConfig) any {
		m, _ := c.Plugins[criRuntime]["containerd"].(map[string]any)
		m, _ = m["runtimes"].(map[string]any)
		m, _ = m["runc"].(map[string]any)
		m, _ = m["options"].(map[string]any)
		return m["SystemdCgroup"]
	}
	operatorKept := func(t *testing.T, c containerdConfig) {
		t.Helper()
		if got := c.Plugins[criRuntime]["enable_selinux"]; got != true {
			t.Errorf("enable_selinux = %v, want the operator's true", got)
		}
		if got := runc(c); got != true {
			t.Errorf("runc's SystemdCgroup = %v, want the operator's true", got)
		}
		if got := c.Plugins[nriPlugin]["plugin_request_timeout"]; got != "7s" {
			t.Errorf("plugin_request_timeout = %v, want the operator's 7s", got)
		}
	}

	t.Run("with the drop-in", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(confD, "nrinet-network-mode.toml"), dropIn, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(filepath.Join(confD, "nrinet-network-mode.toml")) })
		c := dump(t)
		if got := c.Plugins[criRuntime]["network_mode"]; got != "nri" {
			t.Errorf("network_mode = %v, want nri (from the drop-in)", got)
		}
		nri := c.Plugins[nriPlugin]
		if nri["disable"] != false || nri["socket_path"] != "/var/run/nri/nri.sock" {
			t.Errorf("NRI: disable = %v, socket_path = %v; want false, /var/run/nri/nri.sock", nri["disable"], nri["socket_path"])
		}
		if got, _ := nri["required_network_plugins"].([]any); !slices.Equal(got, []any{"podnet"}) {
			t.Errorf("required_network_plugins = %v, want [podnet]", nri["required_network_plugins"])
		}
		if !slices.Contains(c.Imports, filepath.Join(confD, "*.toml")) {
			t.Errorf("imports = %q, want the conf.d pattern among them", c.Imports)
		}
		operatorKept(t, c)
	})
	t.Run("switched back", func(t *testing.T) {
		c := dump(t)
		// The default, "" (as patch 0001 has it), is cni.
		if got := c.Plugins[criRuntime]["network_mode"]; got != "" && got != "cni" {
			t.Errorf("network_mode = %q, want cni or the default (cni) without the drop-in", got)
		}
		if got, _ := c.Plugins[nriPlugin]["required_network_plugins"].([]any); len(got) != 0 {
			t.Errorf("required_network_plugins = %v, want none", got)
		}
		operatorKept(t, c)
	})
}
