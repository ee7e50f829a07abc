package interop_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
)

// exitNoNetworkExtension is the exit status of nri-podnet and nri-cni when
// they refuse a runtime without the pod network extension.
const exitNoNetworkExtension = 3

// rootCommands holds the root module's commands built by rootCommand.
var rootCommands struct {
	mu  sync.Mutex
	bin map[string]string
}

// rootCommand builds the root module's command cmd/name once per test
// binary (in the root module, with its own go.mod, so that this module
// needs none of the command's dependencies) and returns its path.
func rootCommand(t *testing.T, name string) string {
	t.Helper()
	rootCommands.mu.Lock()
	defer rootCommands.mu.Unlock()
	if p, ok := rootCommands.bin[name]; ok {
		return p
	}
	out := filepath.Join(binDir, name)
	if err := testutil.GoBuild(filepath.Join("..", ".."), binDir, nil, "./cmd/"+name); err != nil {
		t.Fatal(err)
	}
	if rootCommands.bin == nil {
		rootCommands.bin = map[string]string{}
	}
	rootCommands.bin[name] = out
	return out
}

// skipUnlessRoot skips t when not running as root, except in CI
// (CI=true), where running without root is a failure.
func skipUnlessRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this test needs root, and CI runs as root")
	}
	t.Skip("needs root")
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// runCmd runs a command and fails the test with its output if it fails.
func runCmd(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newNetNS creates a named network namespace, deleted by name when the
// test ends, and returns its path.
func newNetNS(t *testing.T, name string) string {
	t.Helper()
	runCmd(t, "ip", "netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	return filepath.Join("/var/run/netns", name)
}

// links lists the names of the network interfaces `ip -o ARGS...` prints
// ("-n NS link show" for a namespace, "link show master BR" for a
// bridge's ports).
func links(t *testing.T, args ...string) []string {
	t.Helper()
	out := runCmd(t, "ip", append([]string{"-o"}, args...)...)
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			names = append(names, strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0])
		}
	}
	return names
}

// goldenWithNetNS writes a golden directory for the driver whose pod has
// the given ID and network namespace path, and returns it.
func goldenWithNetNS(t *testing.T, id, netns string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"container.json", "resources.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pod := golden(t, "pod.json", &api.PodSandbox{})
	pod.Id = id
	for _, ns := range pod.GetLinux().GetNamespaces() {
		if ns.GetType() == "network" {
			ns.Path = netns
		}
	}
	b, err := protojson.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pod.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// refusingPlugin is how TestNetworkPluginsRefuseUpstreamRuntime runs one
// network plugin: its configuration, and what its work on a pod would
// leave behind.
type refusingPlugin struct {
	name, fullName string
	// setup writes the plugin's configuration into dir and returns the
	// command's arguments besides -socket, and a check that fails the test
	// if the plugin did any work for the pod whose netns is nsName.
	setup func(t *testing.T, dir, nsName string) (args []string, untouched func(t *testing.T))
}

var refusingPlugins = []refusingPlugin{
	{name: "nri-podnet", fullName: "10-podnet", setup: setupPodnet},
	{name: "nri-cni", fullName: "10-cni", setup: setupCNI},
}

// setupPodnet configures nri-podnet with a bridge and subnet of its own.
// Started with a configuration, nri-podnet prepares its bridge and state
// directory before it connects, so the bridge exists (and is deleted by
// name when the test ends); the check is that it has no port and the
// pod's namespace has nothing but lo.
func setupPodnet(t *testing.T, dir, nsName string) ([]string, func(*testing.T)) {
	bridge := "nrirb" + randHex(4)
	t.Cleanup(func() { exec.Command("ip", "link", "del", "dev", bridge).Run() })
	cfg := fmt.Sprintf(`{"bridge":%q,"subnets":["198.18.%d.0/24"],"mtu":1400,"stateDir":%q}`,
		bridge, 150+int(randHex(1)[0])%50, filepath.Join(dir, "state"))
	file := filepath.Join(dir, "podnet.json")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"-config", file}, func(t *testing.T) {
		if ports := links(t, "link", "show", "master", bridge); len(ports) > 0 {
			t.Errorf("bridge %s has ports %v: nri-podnet wired a pod", bridge, ports)
		}
		if got := links(t, "-n", nsName, "link", "show"); len(got) != 1 || got[0] != "lo" {
			t.Errorf("the pod's netns %s has interfaces %v, want only lo", nsName, got)
		}
	}
}

// setupCNI configures nri-cni with a network whose only plugin is a
// script that logs every CNI command it runs, installed as the loopback
// plugin too: loading the network asks it VERSION, and any work for a pod
// would log ADD, DEL, CHECK, GC or STATUS.
func setupCNI(t *testing.T, dir, nsName string) ([]string, func(*testing.T)) {
	binDir, confDir, log := filepath.Join(dir, "bin"), filepath.Join(dir, "net.d"), filepath.Join(dir, "cni.log")
	for _, d := range []string{binDir, confDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
echo "$CNI_COMMAND $CNI_CONTAINERID" >> %q
cat > /dev/null
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}' ;;
ADD) echo '{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"'"$CNI_NETNS"'"}],"ips":[{"address":"198.18.199.2/24","interface":0}]}' ;;
esac
`, log)
	// Also as the loopback plugin, for the loopback network nri-cni runs
	// before the pod's: without it nri-cni waits for it to be installed.
	for _, typ := range []string{"nrinet-rec", "loopback"} {
		if err := os.WriteFile(filepath.Join(binDir, typ), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conflist := `{"cniVersion":"1.0.0","name":"refuse-net","plugins":[{"type":"nrinet-rec"}]}`
	if err := os.WriteFile(filepath.Join(confDir, "10-refuse.conflist"), []byte(conflist), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"confDir":%q,"binDirs":[%q],"cacheDir":%q}`, confDir, binDir, filepath.Join(dir, "cache"))
	file := filepath.Join(dir, "cni.json")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"-config", file}, func(t *testing.T) {
		b, err := os.ReadFile(log)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" && !strings.HasPrefix(l, "VERSION") {
				t.Errorf("nri-cni ran CNI %q", l)
			}
		}
		if got := links(t, "-n", nsName, "link", "show"); len(got) != 1 || got[0] != "lo" {
			t.Errorf("the pod's netns %s has interfaces %v, want only lo", nsName, got)
		}
	}
}

// TestNetworkPluginsRefuseUpstreamRuntime runs nri-podnet and nri-cni, the
// real commands in processes of their own, by hand against upstream's
// runtime (containerd/nri v0.12.5's pkg/adaptation), which does not
// advertise nrinet's pod network extension. Each refuses Configure, so
// upstream never takes it in, and exits with status 3 and one error that
// names the runtime, says what is missing and what to do. A pod run
// through upstream's runtime afterwards succeeds, and the plugin did
// nothing for it (checked after RunPodSandbox, as StopPodSandbox would
// undo the work).
func TestNetworkPluginsRefuseUpstreamRuntime(t *testing.T) {
	skipUnlessRoot(t)
	for _, p := range refusingPlugins {
		t.Run(p.name, func(t *testing.T) {
			exe := rootCommand(t, p.name)
			dir := t.TempDir()
			nsName := "nrir" + randHex(4)
			podID := "refuse-pod-" + randHex(8)
			d := startDriver(t, "upstream", "-golden", goldenWithNetNS(t, podID, newNetNS(t, nsName)))
			args, untouched := p.setup(t, dir, nsName)

			cmd := exec.Command(exe, append(args, "-socket", d.sock)...)
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var waitErr error
			exited := make(chan struct{})
			go func() { waitErr = cmd.Wait(); close(exited) }()
			t.Cleanup(func() {
				cmd.Process.Kill() // by PID; nothing once it was waited for
				<-exited
				if t.Failed() {
					t.Logf("%s's standard error:\n%s", p.name, stderr)
				}
			})

			select {
			case <-exited:
				var ee *exec.ExitError
				if !errors.As(waitErr, &ee) || ee.ExitCode() != exitNoNetworkExtension {
					t.Errorf("%s ended with %v, want exit status %d", p.name, waitErr, exitNoNetworkExtension)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("%s still runs 20 s after it connected to a runtime without the pod network extension", p.name)
			}
			want := fmt.Sprintf(`%s: plugin %q refuses to join runtime "upstream-driver" version "v0.0.1"`, p.name, p.fullName)
			for _, s := range []string{want, "pod network extension", "keep using CNI"} {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("%s's error does not say %q", p.name, s)
				}
			}
			if n := strings.Count(stderr.String(), "refuses to join"); n != 1 {
				t.Errorf("%s reported the refusal %d times, want once", p.name, n)
			}
			// Upstream closes the connection first and logs after, so the
			// line may still be on its way.
			if err := testutil.Poll(10*time.Second, 10*time.Millisecond, testutil.Until("upstream's runtime to log that configuring "+p.name+" failed", func() bool {
				return strings.Contains(d.stderr.String(), "failed to configure plugin")
			})); err != nil {
				t.Error(err)
			}

			if r := d.runPod(t); r.Error != "" {
				t.Errorf("RunPodSandbox through upstream's runtime: %s", r.Error)
			}
			untouched(t)
			d.quit(t)
		})
	}
}
