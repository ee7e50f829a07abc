package interop_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/test/interop/internal/wire"
)

// bin holds the helper binaries, built once by TestMain.
var bin = map[string]string{}

// binDir is the directory TestMain builds the helper binaries into; the
// root module's commands go there too (rootCommand).
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nrinet-interop-bin-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := func() int {
		defer os.RemoveAll(dir)
		for _, impl := range []string{"nrinet", "upstream"} {
			for _, cmd := range []string{"driver", "recplugin"} {
				out := filepath.Join(dir, impl+"-"+cmd)
				args := []string{"build", "-o", out}
				if impl == "upstream" {
					args = append(args, "-tags", "upstream")
				}
				b := exec.Command("go", append(args, "./cmd/"+cmd)...)
				b.Stderr = os.Stderr
				if err := b.Run(); err != nil {
					fmt.Fprintf(os.Stderr, "building %s %s: %v\n", impl, cmd, err)
					return 1
				}
				bin[impl+"-"+cmd] = out
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

type driverLine = wire.Line

// driverProc is a running driver.
type driverProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan driverLine
	sock  string
	// stderr collects what the driver (its runtime library) logs.
	stderr *syncBuffer
	// side collects the update and evict lines read while waiting for
	// something else.
	side []driverLine
}

func startDriver(t *testing.T, impl string, args ...string) *driverProc {
	t.Helper()
	dir := t.TempDir()
	d := &driverProc{sock: filepath.Join(dir, "run", "nri.sock"), lines: make(chan driverLine, 100), stderr: &syncBuffer{}}
	args = append([]string{"-socket", d.sock, "-golden", "testdata"}, args...)
	if !slices.Contains(args, "-plugin-dir") {
		args = append(args, "-plugin-dir", filepath.Join(dir, "no-plugins"), "-conf-dir", filepath.Join(dir, "no-conf"))
	}
	d.cmd = exec.Command(bin[impl+"-driver"], args...)
	d.cmd.Stderr = io.MultiWriter(d.stderr, &logWriter{t: t, prefix: impl + "-driver: "})
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(d.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var l driverLine
			if err := json.Unmarshal(sc.Bytes(), &l); err == nil {
				d.lines <- l
			}
		}
	}()
	t.Cleanup(func() {
		d.stdin.Close()
		done := make(chan struct{})
		go func() { d.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			d.cmd.Process.Kill()
			<-done
		}
	})
	if l := d.next(t); l.Step != "ready" {
		t.Fatalf("driver said %+v, want ready", l)
	}
	return d
}

func (d *driverProc) next(t *testing.T) driverLine {
	t.Helper()
	select {
	case l, ok := <-d.lines:
		if !ok {
			t.Fatal("driver exited")
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("driver is silent")
	}
	return driverLine{}
}

// run sends every lifecycle event and returns the results by event.
func (d *driverProc) run(t *testing.T) map[string]driverLine {
	t.Helper()
	fmt.Fprintln(d.stdin, "run")
	out := map[string]driverLine{}
	for {
		l := d.next(t)
		switch l.Step {
		case "result":
			out[l.Event] = l
		case "done":
			return out
		}
	}
}

// runPod sends RunPodSandbox of the golden pod alone and returns its
// result line.
func (d *driverProc) runPod(t *testing.T) driverLine {
	t.Helper()
	fmt.Fprintln(d.stdin, "runpod")
	for {
		l := d.next(t)
		if l.Step == "result" {
			return l
		}
		d.side = append(d.side, l)
	}
}

// request sends one CreateContainerRequest or UpdateContainerRequest
// ("create" or "update") and returns its result line.
func (d *driverProc) request(t *testing.T, verb string, req proto.Message) driverLine {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), verb+"-*.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := protojson.Marshal(req)
	if err == nil {
		_, err = f.Write(b)
	}
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(d.stdin, verb, f.Name())
	for {
		l := d.next(t)
		if l.Step == "result" {
			return l
		}
		d.side = append(d.side, l)
	}
}

// awaitSide waits until the driver printed n lines of step ("update" or
// "evict") and returns them.
func (d *driverProc) awaitSide(t *testing.T, step string, n int) []driverLine {
	t.Helper()
	for {
		var got []driverLine
		for _, l := range d.side {
			if l.Step == step {
				got = append(got, l)
			}
		}
		if len(got) >= n {
			return got
		}
		d.side = append(d.side, d.next(t))
	}
}

// quit stops the driver's runtime and waits for it to exit.
func (d *driverProc) quit(t *testing.T) {
	t.Helper()
	fmt.Fprintln(d.stdin, "quit")
	for l := d.next(t); l.Step != "stopped"; l = d.next(t) {
	}
}

// logWriter forwards a helper's stderr to the test log.
type logWriter struct {
	t      *testing.T
	prefix string
}

func (w *logWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.t.Log(w.prefix + l)
	}
	return len(p), nil
}

// startPlugin runs an external recplugin against sock; the returned
// buffer collects its standard error.
func startPlugin(t *testing.T, impl, sock, name, idx, out string, adjust bool) *syncBuffer {
	t.Helper()
	return startPluginConfig(t, impl, sock, name, idx, fmt.Sprintf(`{"out":%q,"adjust":%v}`, out, adjust))
}

// startPluginConfig runs an external recplugin with configuration cfg.
func startPluginConfig(t *testing.T, impl, sock, name, idx, cfg string) *syncBuffer {
	t.Helper()
	cmd := exec.Command(bin[impl+"-recplugin"], "-socket", sock, "-name", name, "-idx", idx, "-config", cfg)
	stderr := &syncBuffer{}
	cmd.Stderr = io.MultiWriter(stderr, &logWriter{t: t, prefix: impl + "-plugin: "})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Upstream runtimes never close external plugins' connections,
		// so a plugin may still be running: end it.
		cmd.Process.Kill()
		cmd.Wait()
	})
	return stderr
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type record = wire.Record

func readRecords(t *testing.T, path string) []record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []record
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var r record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("bad record %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

// waitRecord waits until the plugin has recorded ev and returns that record.
func waitRecord(t *testing.T, path, ev string) record {
	t.Helper()
	var found record
	if err := testutil.Poll(60*time.Second, 10*time.Millisecond, func() error {
		for _, r := range readRecords(t, path) {
			if r.Event == ev {
				found = r
				return nil
			}
		}
		return fmt.Errorf("plugin did not record %s; it recorded %v", ev, events(readRecords(t, path)))
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

func events(recs []record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Event)
	}
	return out
}

// golden loads a testdata message into m.
func golden[M proto.Message](t *testing.T, name string, m M) M {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(b, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// equalJSON decodes raw into a fresh M and compares it with want.
func equalJSON[M proto.Message](t *testing.T, what string, raw json.RawMessage, want M) {
	t.Helper()
	got := want.ProtoReflect().New().Interface().(M)
	if err := protojson.Unmarshal(raw, got); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("%s differs:\n got %v\nwant %v", what, got, want)
	}
}

var allEvents = []string{
	"RunPodSandbox", "UpdatePodSandbox", "PostUpdatePodSandbox", "CreateContainer",
	"PostCreateContainer", "StartContainer", "PostStartContainer", "UpdateContainer",
	"PostUpdateContainer", "StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox",
}

// TestSession runs a full plugin session for each pairing of runtime and
// plugin implementations, asserting the payloads the plugin received and
// the results the runtime got back. The upstream/upstream pairing is the
// reference the others must match.
func TestSession(t *testing.T) {
	pod := golden(t, "pod.json", &api.PodSandbox{})
	ctr := golden(t, "container.json", &api.Container{})
	res := golden(t, "resources.json", &api.LinuxResources{})
	for _, tc := range []struct{ runtime, plugin string }{
		{"nrinet", "upstream"},
		{"upstream", "nrinet"},
		{"nrinet", "nrinet"},
		{"upstream", "upstream"},
	} {
		t.Run(tc.runtime+"-runtime/"+tc.plugin+"-plugin", func(t *testing.T) {
			d := startDriver(t, tc.runtime)
			out := filepath.Join(t.TempDir(), "rec.jsonl")
			stderr := startPlugin(t, tc.plugin, d.sock, "rec", "10", out, true)

			cfg := waitRecord(t, out, "Configure")
			if cfg.Runtime != tc.runtime+"-driver" || cfg.Version != "v0.0.1" || cfg.RegTimeout != 5000 || cfg.ReqTimeout != 2000 {
				t.Errorf("Configure got runtime %q %q, timeouts %d/%d ms", cfg.Runtime, cfg.Version, cfg.RegTimeout, cfg.ReqTimeout)
			}
			sync := waitRecord(t, out, "Synchronize")
			if sync.Pods != 3 || sync.Containers != 5 || sync.LastPodID != "sync-pod-2" || sync.LastCtrID != "sync-ctr-4" {
				t.Errorf("Synchronize got %d pods (last %q), %d containers (last %q)", sync.Pods, sync.LastPodID, sync.Containers, sync.LastCtrID)
			}
			wantPod := proto.CloneOf(pod)
			wantPod.Id = "sync-pod-0"
			equalJSON(t, "synchronized pod", sync.Pod, wantPod)
			wantCtr := proto.CloneOf(ctr)
			wantCtr.Id, wantCtr.PodSandboxId = "sync-ctr-0", "sync-pod-0"
			equalJSON(t, "synchronized container", sync.Container, wantCtr)

			results := d.run(t)
			for _, ev := range allEvents {
				if r, ok := results[ev]; !ok || r.Error != "" {
					t.Errorf("%s: result %+v", ev, r)
				}
			}
			crsp := &api.CreateContainerResponse{}
			if err := protojson.Unmarshal(results["CreateContainer"].Response, crsp); err != nil {
				t.Fatal(err)
			}
			adj := crsp.GetAdjust()
			if adj.GetAnnotations()["interop.nrinet.io/rec"] != "yes" || len(adj.GetEnv()) != 1 ||
				adj.GetEnv()[0].GetKey() != "INTEROP_REC" || adj.GetEnv()[0].GetValue() != "1" {
				t.Errorf("CreateContainer adjustment = %v, want the plugin's env var and annotation", adj)
			}

			var got []string
			for _, r := range readRecords(t, out) {
				if !slices.Contains(allEvents, r.Event) {
					continue
				}
				got = append(got, r.Event)
				equalJSON(t, r.Event+" pod", r.Pod, pod)
				if strings.Contains(r.Event, "Container") {
					want := ctr
					if r.Event == "CreateContainer" && tc.runtime == "upstream" {
						// Upstream normalizes the container it shows plugins
						// on creation: absent hooks become an empty message.
						want = proto.CloneOf(ctr)
						want.Hooks = &api.Hooks{}
					}
					equalJSON(t, r.Event+" container", r.Container, want)
				}
				if r.Event == "UpdatePodSandbox" {
					equalJSON(t, r.Event+" overhead", r.Overhead, res)
				}
				if r.Event == "UpdatePodSandbox" || r.Event == "UpdateContainer" {
					equalJSON(t, r.Event+" resources", r.Resources, res)
				}
			}
			if !slices.Equal(got, allEvents) {
				t.Errorf("plugin received %v, want %v", got, allEvents)
			}

			// The pod network extension: only an nrinet runtime offers it,
			// and only the nrinet plugin subscribes to it.
			gotStatus := slices.Contains(events(readRecords(t, out)), "PodSandboxStatus")
			if wantStatus := tc.runtime == "nrinet" && tc.plugin == "nrinet"; gotStatus != wantStatus {
				t.Errorf("plugin got PodSandboxStatus: %v, want %v", gotStatus, wantStatus)
			}
			warned := strings.Count(stderr.String(), "does not support the pod network extension")
			if wantWarn := tc.runtime == "upstream" && tc.plugin == "nrinet"; (warned == 1) != wantWarn || warned > 1 {
				t.Errorf("plugin warned %d times about the missing extension (runtime %s):\n%s", warned, tc.runtime, stderr)
			}
			if tc.runtime == "nrinet" {
				st := &api.PodNetworkRecord{}
				if err := protojson.Unmarshal(results["PodSandboxStatus"].Response, st); err != nil && len(results["PodSandboxStatus"].Response) > 0 {
					t.Fatal(err)
				}
				wantIPs := []string(nil)
				if tc.plugin == "nrinet" {
					wantIPs = []string{"198.18.0.42"}
				}
				if got := st.GetNetwork().GetIps(); !slices.Equal(got, wantIPs) || results["PodSandboxStatus"].Error != "" {
					t.Errorf("PodSandboxStatus = %v (error %q), want ips %v", got, results["PodSandboxStatus"].Error, wantIPs)
				}
			}

			d.quit(t)
			waitRecord(t, out, "Closed")
			if tc.runtime == "nrinet" && !slices.Contains(events(readRecords(t, out)), "Shutdown") {
				t.Errorf("nrinet runtime stopped without sending Shutdown: %v", events(readRecords(t, out)))
			}
		})
	}
}

// TestLaunchedUpstreamPlugin has the nrinet runtime start an upstream
// plugin binary from its plugin directory, with a configuration file.
func TestLaunchedUpstreamPlugin(t *testing.T) {
	dir := t.TempDir()
	pluginDir, confDir := filepath.Join(dir, "plugins"), filepath.Join(dir, "conf.d")
	os.Mkdir(pluginDir, 0o755)
	os.Mkdir(confDir, 0o755)
	exe, err := os.ReadFile(bin["upstream-recplugin"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pluginDir, "20-launched"), exe, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "rec.jsonl")
	conf := fmt.Sprintf(`{"out":%q,"adjust":true}`, out)
	if err := os.WriteFile(filepath.Join(confDir, "20-launched.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDriver(t, "nrinet", "-plugin-dir", pluginDir, "-conf-dir", confDir)

	cfg := waitRecord(t, out, "Configure")
	if cfg.Config != conf || cfg.Plugin != "launched" {
		t.Errorf("launched plugin %q got config %q, want %q", cfg.Plugin, cfg.Config, conf)
	}
	results := d.run(t)
	crsp := &api.CreateContainerResponse{}
	if err := protojson.Unmarshal(results["CreateContainer"].Response, crsp); err != nil {
		t.Fatal(err)
	}
	if crsp.GetAdjust().GetAnnotations()["interop.nrinet.io/launched"] != "yes" {
		t.Errorf("CreateContainer adjustment = %v", crsp.GetAdjust())
	}
	if got := events(readRecords(t, out)); !slices.Contains(got, "RemovePodSandbox") {
		t.Errorf("launched plugin recorded %v", got)
	}
	d.quit(t)
	waitRecord(t, out, "Closed")
}

// TestLargeSynchronize synchronizes 6000 pods and 6000 containers, more
// than one ttrpc message holds, in both directions.
func TestLargeSynchronize(t *testing.T) {
	for _, tc := range []struct{ runtime, plugin string }{{"nrinet", "upstream"}, {"upstream", "nrinet"}} {
		t.Run(tc.runtime+"-runtime/"+tc.plugin+"-plugin", func(t *testing.T) {
			d := startDriver(t, tc.runtime, "-pods", "6000", "-containers", "6000")
			out := filepath.Join(t.TempDir(), "rec.jsonl")
			startPlugin(t, tc.plugin, d.sock, "big", "10", out, false)
			sync := waitRecord(t, out, "Synchronize")
			if sync.Pods != 6000 || sync.Containers != 6000 || sync.LastPodID != "sync-pod-5999" || sync.LastCtrID != "sync-ctr-5999" {
				t.Fatalf("Synchronize got %d pods (last %q), %d containers (last %q)", sync.Pods, sync.LastPodID, sync.Containers, sync.LastCtrID)
			}
			if r := d.run(t)["RunPodSandbox"]; r.Error != "" {
				t.Fatalf("RunPodSandbox after the large sync: %s", r.Error)
			}
			waitRecord(t, out, "RunPodSandbox")
		})
	}
}
