// Command nrinet-demo shows the whole nrinet path on one machine: crictl
// talks CRI to nrinetd, which runs every pod sandbox's NRI hooks through
// the nrinet runtime library, where nri-podnet wires the pod's network
// and hands its addresses back; crictl inspectp then shows them, with the
// plugin that owns each.
//
// It builds nrinetd and nri-podnet, installs crictl (go install, cached),
// starts everything in a temporary directory, runs three pods, pings
// between them, and removes everything it created. It needs root, ip
// (iproute2) and ping (iputils-ping), and checks for them first
// (internal/hostdeps, the list make test and CI share): a missing
// command is installed with apt-get where there is one, after saying
// which package and why; elsewhere the demo stops and names the package.
//
//	go run ./cmd/nrinet-demo      (or: make demo)
//
// -help prints the usage on standard output and exits 0. A bad command
// line (an unknown flag, a bad value, stray arguments) or a -clean
// directory that is not a kept demo's exits with status 2 before anything
// is done (nothing checked or installed), with one line on standard error
// naming the flag and the value; any other error exits with status 1
// (package cmd/internal/cli).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/internal/gobin"
	"github.com/nrinet/nrinet/internal/hostdeps"
	"github.com/nrinet/nrinet/internal/pins"
	"github.com/nrinet/nrinet/internal/sdnotify"
	"github.com/nrinet/nrinet/internal/version"
)

// Demo network: an RFC 2544 benchmarking range, never routed.
const (
	bridge   = "nrdemo0"
	subnetV4 = "198.18.50.0/24"
	subnetV6 = "fd00:198:18:50::/64"
)

func main() {
	c := cli.New("nrinet-demo", `
Shows the whole nrinet path on one machine: builds nrinetd and nri-podnet,
starts them in a temporary directory, runs three pods with crictl, pings
between them, and removes everything it created. It needs root, ip and ping
(installed with apt-get where missing, after saying why). A usage error exits
with status 2, before anything is done; any other error with status 1.`,
		"[-keep]",
		"-clean DIR")
	keep := c.Flags.Bool("keep", false, "leave nrinetd and the pods running, in a session of their own (prints how to clean up)")
	clean := c.Flags.String("clean", "", "remove everything a demo run with -keep left, given its `directory`, and exit")
	showVersion := c.Flags.Bool("version", false, `print "nrinet-demo VERSION" and exit`)
	c.Main(func() error {
		if err := c.Parse(os.Args[1:]); err != nil {
			return err
		}
		if *showVersion {
			fmt.Println("nrinet-demo", version.String())
			return nil
		}
		var kept *keptRun
		if *clean != "" {
			var err error
			if kept, err = readKept(*clean); err != nil {
				return err
			}
		}
		if err := hostdeps.Check(os.Stdout, hostdeps.ThisHost(), hostdeps.Demo); err != nil {
			return err
		}
		if kept != nil {
			if err := kept.clean(); err != nil {
				return err
			}
			fmt.Printf("removed the demo's pods, nrinetd, the bridge %s, its nftables tables and %s\n", bridge, kept.dir)
			return nil
		}
		return runDemo(*keep)
	})
}

// runDemo runs the demo, and removes what it created unless keep (and it
// succeeded).
func runDemo(keep bool) error {
	d := &demo{keep: keep}
	err := d.run()
	if !d.keep || err != nil {
		if cerr := d.cleanup(); cerr != nil {
			fmt.Fprintln(os.Stderr, "nrinet-demo: cleaning up:", cerr)
		}
	}
	return err
}

// demo holds what the demo created, for cleanup.
type demo struct {
	keep    bool
	dir     string
	bin     map[string]string
	crictl  string
	criSock string
	conf    string
	daemon  *exec.Cmd
	exited  chan struct{} // closed once daemon exited
	// keptPID is a kept nrinetd's, which -clean found running.
	keptPID int
	// tablesBefore are nri-podnet's nftables tables that were there
	// before the demo: cleanup leaves them.
	tablesBefore []string
	pods         []string
	step         int
}

const steps = 9

func (d *demo) progress(format string, args ...any) {
	d.step++
	fmt.Printf("[%d/%d] %s\n", d.step, steps, fmt.Sprintf(format, args...))
}

func (d *demo) run() error {
	var err error
	if d.dir, err = os.MkdirTemp("", "nrinet-demo-"); err != nil {
		return err
	}
	if d.tablesBefore, err = podnetTables(); err != nil {
		return err
	}

	d.progress("building nrinetd and nri-podnet")
	d.bin = map[string]string{}
	for _, name := range []string{"nrinetd", "nri-podnet"} {
		out := filepath.Join(d.dir, "bin", name)
		// The flags of make build (static, no build paths), so that the
		// demo shares the Go build cache with it and with the tests.
		build := exec.Command("go", "build", "-trimpath", "-o", out, "github.com/nrinet/nrinet/cmd/"+name)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", name, err, b)
		}
		d.bin[name] = out
	}

	d.progress("installing crictl %s (go install, cached in %s)", pins.CRITools, crictlDir())
	if d.crictl, err = installCrictl(); err != nil {
		return err
	}

	d.progress("writing configuration in %s (bridge %s, pods in %s and %s)", d.dir, bridge, subnetV4, subnetV6)
	if d.conf, err = d.writeConfig(); err != nil {
		return err
	}

	d.progress("starting nrinetd, which launches nri-podnet from its plugin directory (log: %s)", d.logPath())
	if err := d.startDaemon(); err != nil {
		return err
	}

	d.progress("crictl info: runtime and network ready?")
	info, err := d.crictlJSON("info")
	if err != nil {
		return err
	}
	for _, c := range asSlice(dig(info, "status", "conditions")) {
		fmt.Printf("      %-14s %v %s\n", dig(c, "type"), dig(c, "status"), strOr(dig(c, "message"), ""))
	}

	d.progress("running 3 pods with crictl runp")
	for _, name := range []string{"web", "api", "db"} {
		cfg := filepath.Join(d.dir, name+".json")
		b, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"name": name, "namespace": "demo", "uid": "demo-" + name, "attempt": 0},
			"labels":   map[string]string{"app": name},
		})
		os.WriteFile(cfg, b, 0o644)
		out, err := d.crictlCmd("runp", cfg)
		if err != nil {
			return err
		}
		id := strings.TrimSpace(out)
		d.pods = append(d.pods, id)
		fmt.Printf("      %-4s sandbox %s\n", name, id[:13])
	}

	d.progress("crictl inspectp: the addresses the kubelet would see, and who set them")
	type podIPs struct {
		name, netns string
		ips         []string
	}
	var all []podIPs
	for _, id := range d.pods {
		insp, err := d.crictlJSON("inspectp", id)
		if err != nil {
			return err
		}
		ip := strOr(dig(insp, "status", "network", "ip"), "")
		ips := []string{ip}
		for _, a := range asSlice(dig(insp, "status", "network", "additionalIps")) {
			ips = append(ips, strOr(dig(a, "ip"), ""))
		}
		var v struct {
			NetNS string `json:"netns"`
			IPs   []struct{ IP, Owner string }
		}
		// nrinetd's verbose info is one JSON object under the key "info";
		// crictl shows it decoded, as the value of "info".
		raw := dig(insp, "info")
		if dig(raw, "netns") == nil {
			raw = dig(raw, "info")
		}
		if str, ok := raw.(string); ok {
			json.Unmarshal([]byte(str), &v)
		} else {
			b, _ := json.Marshal(raw)
			json.Unmarshal(b, &v)
		}
		name := strOr(dig(insp, "status", "metadata", "name"), id[:13])
		fmt.Printf("      %-4s ip %-15s additionalIps %v\n", name, ip, ips[1:])
		for _, o := range v.IPs {
			fmt.Printf("           %-24s owned by %s\n", o.IP, o.Owner)
		}
		all = append(all, podIPs{name: name, netns: filepath.Base(v.NetNS), ips: ips})
	}

	d.progress("pinging between the pods, from inside their network namespaces")
	for _, from := range all {
		for _, to := range all {
			if from.name == to.name {
				continue
			}
			for _, ip := range to.ips {
				out, err := exec.Command("ip", "netns", "exec", from.netns, "ping", "-c", "1", "-W", "2", ip).CombinedOutput()
				if err != nil {
					return fmt.Errorf("ping %s → %s (%s): %v\n%s", from.name, to.name, ip, err, out)
				}
				fmt.Printf("      %-4s → %-4s %-24s ok\n", from.name, to.name, ip)
			}
		}
	}

	if d.keep {
		self, err := d.keepState()
		if err != nil {
			return err
		}
		d.progress("leaving everything running: %s --runtime-endpoint unix://%s pods", d.crictl, d.criSock)
		fmt.Printf("      nrinetd (pid %d) and nri-podnet log to %s\n", d.daemon.Process.Pid, d.logPath())
		fmt.Printf("      to clean up: %s -clean %s\n", self, d.dir)
		return nil
	}
	d.progress("cleaning up: stopping and removing the pods, nrinetd, the bridge and %s", d.dir)
	return nil
}

// writeConfig lays out nrinetd's and nri-podnet's configuration.
func (d *demo) writeConfig() (string, error) {
	pluginDir, confDir := filepath.Join(d.dir, "plugins"), filepath.Join(d.dir, "conf.d")
	for _, p := range []string{pluginDir, confDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return "", err
		}
	}
	b, _ := json.Marshal(map[string]any{
		"bridge": bridge, "subnets": []string{subnetV4, subnetV6}, "stateDir": filepath.Join(d.dir, "podnet"),
	})
	if err := os.WriteFile(filepath.Join(confDir, "10-podnet.conf"), b, 0o644); err != nil {
		return "", err
	}
	if err := os.Symlink(d.bin["nri-podnet"], filepath.Join(pluginDir, "10-podnet")); err != nil {
		return "", err
	}
	d.criSock = filepath.Join(d.dir, "cri.sock")
	conf := filepath.Join(d.dir, "nrinetd.toml")
	toml := fmt.Sprintf(`cri_socket = %q
nri_socket = %q
plugin_dir = %q
plugin_config_dir = %q
state_dir = %q
required_network_plugins = ["podnet"]
`, d.criSock, filepath.Join(d.dir, "nri.sock"), pluginDir, confDir, filepath.Join(d.dir, "state"))
	return conf, os.WriteFile(conf, []byte(toml), 0o644)
}

// logPath is where nrinetd and the plugins it launches write their log.
func (d *demo) logPath() string { return filepath.Join(d.dir, "nrinetd.log") }

// startDaemon runs nrinetd in a session of its own, its output in
// logPath (so that it outlives the demo with -keep: a pipe to the demo
// would break when the demo exits), and waits until it says, on its
// NOTIFY_SOCKET, that it serves CRI.
func (d *demo) startDaemon() error {
	notifyPath := filepath.Join(d.dir, "notify.sock")
	os.Remove(notifyPath)
	notify, err := sdnotify.Listen(notifyPath)
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(d.logPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		notify.Close()
		return err
	}
	defer logFile.Close() // nrinetd has its own copy
	d.daemon = exec.Command(d.bin["nrinetd"], "-config", d.conf)
	d.daemon.Stdout, d.daemon.Stderr = logFile, logFile
	d.daemon.Env = append(os.Environ(), "NOTIFY_SOCKET="+notifyPath)
	d.daemon.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.daemon.Start(); err != nil {
		notify.Close()
		d.daemon = nil
		return err
	}
	d.exited = make(chan struct{})
	go func() {
		d.daemon.Wait()
		notify.Close()
		close(d.exited)
	}()
	select {
	case <-notify.Ready():
		return nil
	case <-d.exited:
		return fmt.Errorf("nrinetd exited: %v\n%s", d.daemon.ProcessState, d.logTail())
	case <-time.After(20 * time.Second):
		return fmt.Errorf("nrinetd was not ready within 20s:\n%s", d.logTail())
	}
}

// logTail is the end of nrinetd's log, for an error message.
func (d *demo) logTail() string {
	b, _ := os.ReadFile(d.logPath())
	const max = 4096
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

func (d *demo) crictlCmd(args ...string) (string, error) {
	cmd := exec.Command(d.crictl, append([]string{"--config", "/dev/null", "--runtime-endpoint", "unix://" + d.criSock, "--timeout", "30s"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("crictl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

func (d *demo) crictlJSON(sub string, args ...string) (any, error) {
	out, err := d.crictlCmd(append([]string{sub, "-o", "json"}, args...)...)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return nil, fmt.Errorf("crictl %s: %w", sub, err)
	}
	return v, nil
}

func crictlDir() string { return gobin.Dir("nrinet-crictl", pins.CRITools) }

// installCrictl installs crictl into a cache directory shared with the
// end-to-end tests, unless it is already there.
func installCrictl() (string, error) {
	return gobin.Install(crictlDir(), "sigs.k8s.io/cri-tools/cmd/crictl", pins.CRITools)
}

// dig walks decoded JSON by object keys.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func strOr(v any, def string) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return def
	}
	return fmt.Sprint(v)
}
