package nri

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	oci "github.com/opencontainers/runtime-spec/specs-go"

	types "github.com/containerd/nri/types/v1"
)

const (
	// DefaultBinaryPath is where NRI 0.1 plugin executables are looked up
	// when they are not on PATH.
	DefaultBinaryPath = "/opt/nri/bin"
	// DefaultConfPath is the NRI 0.1 configuration.
	DefaultConfPath = "/etc/nri/conf.json"
	// Version is the NRI 0.1 protocol version.
	Version = "0.1"
)

// Client runs the NRI 0.1 plugins of a configuration.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
type Client struct {
	conf    *types.ConfigList
	binPath string // looked in after PATH
}

// Sandbox identifies the pod sandbox of a task.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
type Sandbox struct {
	// ID of the sandbox.
	ID string
	// Labels of the sandbox.
	Labels map[string]string
}

// Task is what the client needs of a container runtime's task.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
type Task interface {
	// ID of the task.
	ID() string
	// Pid of its process.
	Pid() uint32
	// Spec returns the task's OCI spec.
	Spec(context.Context) (*oci.Spec, error)
}

// New reads the configuration at DefaultConfPath; without one the client
// has no plugins and its invocations do nothing.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
func New() (*Client, error) {
	conf, err := loadConfig(DefaultConfPath)
	if err != nil {
		return nil, err
	}
	return &Client{conf: conf, binPath: DefaultBinaryPath}, nil
}

// Plugins lists the configured plugins' names (types).
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
func (c *Client) Plugins() []string {
	names := make([]string, 0, len(c.conf.Plugins))
	for _, p := range c.conf.Plugins {
		names = append(names, p.Type)
	}
	return names
}

// Invoke runs the plugins for a task without a sandbox.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
func (c *Client) Invoke(ctx context.Context, task Task, state types.State) ([]*types.Result, error) {
	return c.InvokeWithSandbox(ctx, task, state, nil)
}

// InvokeWithSandbox runs the configured plugins, in order, for state of
// task: each gets the request on its standard input with the results of
// the plugins before it, and writes its result on its standard output. A
// plugin's error ends the run and is returned with its name.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
func (c *Client) InvokeWithSandbox(ctx context.Context, task Task, state types.State, sandbox *Sandbox) ([]*types.Result, error) {
	if len(c.conf.Plugins) == 0 {
		return nil, nil
	}
	spec, err := task.Spec(ctx)
	if err != nil {
		return nil, err
	}
	req := &types.Request{
		Version: c.conf.Version,
		ID:      task.ID(),
		Pid:     int(task.Pid()),
		State:   state,
		Spec:    requestSpec(spec),
	}
	if sandbox != nil {
		req.SandboxID, req.Labels = sandbox.ID, sandbox.Labels
	}
	for _, p := range c.conf.Plugins {
		req.Conf = p.Conf
		res, err := c.run(ctx, p.Type, req)
		if err != nil {
			return nil, fmt.Errorf("plugin: %s: %w", p.Type, err)
		}
		req.Results = append(req.Results, res)
	}
	return req.Results, nil
}

// run executes one plugin with "invoke" and req on its standard input.
func (c *Client) run(ctx context.Context, name string, req *types.Request) (*types.Result, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	path, err := c.lookPath(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, "invoke")
	cmd.Stdin = bytes.NewReader(payload)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return nil, err // it did not run
	}
	var res types.Result
	if uerr := json.Unmarshal(out, &res); uerr != nil {
		if exitErr != nil {
			return nil, fmt.Errorf("exit code %d, output %q: %w", exitErr.ExitCode(), out, uerr)
		}
		return nil, fmt.Errorf("output %q: %w", out, uerr)
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	return &res, nil
}

// lookPath finds a plugin executable on PATH, then in the binary path.
func (c *Client) lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return exec.LookPath(filepath.Join(c.binPath, name))
}

// loadConfig reads a configuration; a missing file is one without
// plugins.
func loadConfig(path string) (*types.ConfigList, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &types.ConfigList{Version: Version}, nil
	}
	if err != nil {
		return nil, err
	}
	var c types.ConfigList
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("NRI configuration %s: %w", path, err)
	}
	return &c, nil
}

// requestSpec is the part of spec a plugin sees.
func requestSpec(spec *oci.Spec) *types.Spec {
	s := &types.Spec{Namespaces: map[string]string{}, Annotations: spec.Annotations}
	var res any
	switch {
	case spec.Linux != nil:
		s.CgroupsPath = spec.Linux.CgroupsPath
		res = spec.Linux.Resources
		for _, ns := range spec.Linux.Namespaces {
			s.Namespaces[string(ns.Type)] = ns.Path
		}
	case spec.Windows != nil:
		res = spec.Windows.Resources
	default:
		return s
	}
	if b, err := json.Marshal(res); err == nil {
		s.Resources = b
	}
	return s
}
