package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
)

// netScriptEnv carries the script of a network plugin process: the test
// binary, re-executed, runs netPluginMain instead of the tests.
const netScriptEnv = "NRINET_TEST_NETPLUGIN"

// netScript tells a network plugin process what to do.
type netScript struct {
	Socket, Name, Idx string
	// Network is returned from RunPodSandboxNetwork and PodSandboxStatus
	// (protojson of api.PodSandboxNetwork).
	Network json.RawMessage `json:",omitempty"`
	// StatusNetwork, if set, is returned from PodSandboxStatus instead.
	StatusNetwork json.RawMessage `json:",omitempty"`
	// FailRun makes RunPodSandboxNetwork fail with this text.
	FailRun string `json:",omitempty"`
	// StatusSleep delays PodSandboxStatus answers.
	StatusSleep time.Duration `json:",omitempty"`
	// UpdateAfterRun is pushed with UpdatePodSandboxNetwork after each
	// RunPodSandboxNetwork.
	UpdateAfterRun json.RawMessage `json:",omitempty"`
	// KeepConnected is the failure policy's keep_connected.
	KeepConnected bool `json:",omitempty"`
	// Log receives a line per event: "<Event> <pod id> [ips=...]".
	Log string
}

// netPlugin is the scripted network plugin.
type netPlugin struct {
	script            netScript
	network, statusNW *api.PodSandboxNetwork
	update            *api.PodSandboxNetwork
	stub              *plugin.Stub
	mu                sync.Mutex
}

func (p *netPlugin) log(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.script.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(f, format+"\n", args...)
	f.Close()
}

func (p *netPlugin) RunPodSandboxNetwork(_ context.Context, pod *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	p.log("RunPodSandbox %s ips=%s", pod.GetId(), strings.Join(pod.GetIps(), ","))
	if p.script.FailRun != "" {
		return nil, errors.New(p.script.FailRun)
	}
	if p.update != nil {
		go func() {
			err := p.stub.UpdatePodSandboxNetwork(context.Background(), pod.GetId(), p.update)
			p.log("Updated %s err=%v", pod.GetId(), err)
		}()
	}
	return p.network, nil
}

func (p *netPlugin) PodSandboxStatus(ctx context.Context, pod *api.PodSandbox, verbose bool) (*api.PodSandboxNetwork, error) {
	p.log("PodSandboxStatus %s verbose=%v", pod.GetId(), verbose)
	if d := p.script.StatusSleep; d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if p.statusNW != nil {
		return p.statusNW, nil
	}
	return p.network, nil
}

func (p *netPlugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.log("StopPodSandbox %s", pod.GetId())
	return nil
}

func (p *netPlugin) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.log("RemovePodSandbox %s", pod.GetId())
	return nil
}

func parseNet(raw json.RawMessage) *api.PodSandboxNetwork {
	if len(raw) == 0 {
		return nil
	}
	n := &api.PodSandboxNetwork{}
	if err := protojson.Unmarshal(raw, n); err != nil {
		panic(err)
	}
	return n
}

func netPluginMain(raw string) {
	p := &netPlugin{}
	if err := json.Unmarshal([]byte(raw), &p.script); err != nil {
		panic(err)
	}
	p.network, p.statusNW, p.update = parseNet(p.script.Network), parseNet(p.script.StatusNetwork), parseNet(p.script.UpdateAfterRun)
	s, err := plugin.New(p, plugin.WithPluginName(p.script.Name), plugin.WithPluginIdx(p.script.Idx),
		plugin.WithSocketPath(p.script.Socket), plugin.WithFailurePolicy(&api.FailurePolicy{KeepConnected: p.script.KeepConnected}))
	if err == nil {
		p.stub = s
		err = s.Run(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netplugin:", err)
		os.Exit(1)
	}
}

// netProc is a running network plugin process.
type netProc struct {
	cmd  *exec.Cmd
	name string
	log  string
}

// pj encodes a network for a script.
func pj(n *api.PodSandboxNetwork) json.RawMessage {
	b, err := protojson.Marshal(n)
	if err != nil {
		panic(err)
	}
	return b
}

// startNetPlugin runs a scripted network plugin process and waits until it
// has joined.
func (e *env) startNetPlugin(s netScript) *netProc {
	e.t.Helper()
	self, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	s.Socket = e.sock
	s.Log = e.t.(*testing.T).TempDir() + "/" + s.Name + ".log"
	b, _ := json.Marshal(s)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), netScriptEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	proc := &netProc{cmd: cmd, name: s.Idx + "-" + s.Name, log: s.Log}
	e.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(e.t, "plugin "+proc.name+" to join", func() bool { return e.joined(proc.name) })
	return proc
}

// lines returns what the plugin logged.
func (p *netProc) lines() []string {
	b, _ := os.ReadFile(p.log)
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// kill ends the plugin process as a crash would.
func (p *netProc) kill() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// netPod is a pod with a network namespace path, so not host-network.
func netPod(n int) *api.PodSandbox {
	return testPod(n)
}

// memStore is an in-memory PodNetworkStore that records what was set.
type memStore struct {
	mu   sync.Mutex
	recs map[string]*api.PodNetworkRecord
	sets chan string
}

func newMemStore() *memStore {
	return &memStore{recs: map[string]*api.PodNetworkRecord{}, sets: make(chan string, 16)}
}

func (s *memStore) PodNetwork(_ context.Context, podID string) (*api.PodNetworkRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.recs[podID]
	if !ok {
		return nil, fmt.Errorf("no pod %q", podID)
	}
	return rec, nil
}

func (s *memStore) SetPodNetwork(_ context.Context, podID, plugin string, rec *api.PodNetworkRecord) error {
	s.mu.Lock()
	s.recs[podID] = rec
	s.mu.Unlock()
	s.sets <- plugin + " " + podID + " " + strings.Join(rec.GetNetwork().GetIps(), ",")
	return nil
}
