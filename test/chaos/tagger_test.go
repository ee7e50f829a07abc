package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
)

// The second plugin: an external plugin that tags every pod's network.
const (
	taggerName = "chaostag"
	taggerIdx  = "20"
	// TagKey is the info key 20-chaostag sets: the pod's name.
	TagKey = "chaos.nrinet.io/tag"
)

// tagger is the handler of 20-chaostag.
type tagger struct{ log *slog.Logger }

var (
	_ plugin.RunPodSandboxNetworkHandler = tagger{}
	_ plugin.PodSandboxStatusHandler     = tagger{}
	_ plugin.StopPodSandboxHandler       = tagger{}
	_ plugin.RemovePodSandboxHandler     = tagger{}
	_ plugin.SynchronizeHandler          = tagger{}
)

// part is the plugin's part of a pod's network: one info key, none for
// a host-network pod (whose network the runtime ignores).
func (tagger) part(pod *api.PodSandbox) *api.PodSandboxNetwork {
	if pod.NetNSPath() == "" {
		return nil
	}
	return &api.PodSandboxNetwork{Info: map[string]string{TagKey: pod.GetName()}}
}

func (t tagger) RunPodSandboxNetwork(_ context.Context, pod *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	return t.part(pod), nil
}

func (t tagger) PodSandboxStatus(_ context.Context, pod *api.PodSandbox, _ bool) (*api.PodSandboxNetwork, error) {
	return t.part(pod), nil
}

func (tagger) StopPodSandbox(context.Context, *api.PodSandbox) error   { return nil }
func (tagger) RemovePodSandbox(context.Context, *api.PodSandbox) error { return nil }

func (t tagger) Synchronize(_ context.Context, pods []*api.PodSandbox, _ []*api.Container) ([]*api.ContainerUpdate, error) {
	t.log.Info("synchronized", "pods", len(pods))
	return nil, nil
}

// taggerMain runs 20-chaostag against the NRI socket until SIGTERM or
// SIGINT, reconnecting whenever nrinetd goes away, and returns the exit
// code.
func taggerMain(socket string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("plugin", taggerIdx+"-"+taggerName)
	s, err := plugin.New(tagger{log: log}, plugin.WithPluginName(taggerName), plugin.WithPluginIdx(taggerIdx),
		plugin.WithSocketPath(socket), plugin.WithReconnect(0, 0), plugin.WithLogger(log))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaostag:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := s.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "chaostag:", err)
		return 1
	}
	return 0
}

// taggerProc is a running 20-chaostag process.
type taggerProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startTagger runs the test binary as 20-chaostag, its output appended to
// log.
func startTagger(socket string, log *os.File) (*taggerProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), taggerEnv+"="+socket)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting 20-chaostag: %w", err)
	}
	p := &taggerProc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// kill ends the plugin with SIGKILL and waits for it.
func (p *taggerProc) kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// stop ends the plugin with SIGTERM and returns an error unless it exits
// cleanly within patience (it is killed then).
func (p *taggerProc) stop(patience time.Duration) error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(patience):
		p.kill()
		return fmt.Errorf("20-chaostag (pid %d) did not exit within %v of SIGTERM", p.cmd.Process.Pid, patience)
	}
	if !p.cmd.ProcessState.Success() {
		return fmt.Errorf("20-chaostag (pid %d) exited with %v after SIGTERM", p.cmd.Process.Pid, p.cmd.ProcessState)
	}
	return nil
}
