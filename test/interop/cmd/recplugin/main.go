// Command recplugin is an NRI plugin that records every request it gets as
// a JSON line, for the interop tests. It is built twice from the same
// source: on the nrinet plugin library (default) and, with the build tag
// "upstream", on containerd/nri's stub, so each build links only one of the
// two API packages.
//
// Configuration, from the -config flag or, for a plugin launched by the
// runtime, from the runtime's Configure request, is JSON:
//
//	{"out": "/path/to/record.jsonl", "adjust": true, "script": "/path/to/script.json"}
//
// With "adjust", CreateContainer adds the environment variable
// INTEROP_<NAME>=1 and the annotation interop.nrinet.io/<name>=yes.
//
// "script" names a JSON file of a wire.Script: for the containers it
// lists, CreateContainer and UpdateContainer answer with the scripted
// responses (evictions included: the nrinet build returns them through
// its evicting handlers, the upstream build, whose stub has no way to,
// adds them to the encoded response), and after CreateContainer the
// plugin sends the scripted UpdateContainersRequest.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/test/interop/internal/wire"
)

type pluginConfig struct {
	Out    string `json:"out"`
	Adjust bool   `json:"adjust"`
	Script string `json:"script"`
}

type record = wire.Record

type recorder struct {
	name   string
	mu     sync.Mutex
	cfg    pluginConfig
	out    *os.File
	script wire.Script
}

func (r *recorder) setConfig(raw string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if raw == "" || r.out != nil {
		return nil
	}
	if err := json.Unmarshal([]byte(raw), &r.cfg); err != nil {
		return fmt.Errorf("bad config %q: %w", raw, err)
	}
	if r.cfg.Script != "" {
		b, err := os.ReadFile(r.cfg.Script)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &r.script); err != nil {
			return fmt.Errorf("bad script %s: %w", r.cfg.Script, err)
		}
	}
	f, err := os.OpenFile(r.cfg.Out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	r.out = f
	return nil
}

func (r *recorder) write(rec record) {
	rec.Plugin = r.name
	b, err := json.Marshal(rec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recplugin:", err)
		os.Exit(3)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out == nil {
		fmt.Fprintln(os.Stderr, "recplugin: no output configured")
		os.Exit(3)
	}
	r.out.Write(append(b, '\n'))
}

var pj = wire.JSON

func (r *recorder) Configure(_ context.Context, config, runtime, version string) (EventMask, error) {
	if err := r.setConfig(config); err != nil {
		return 0, err
	}
	reg, req := timeouts()
	r.write(record{Event: "Configure", Config: config, Runtime: runtime, Version: version, RegTimeout: reg, ReqTimeout: req})
	return 0, nil
}

func (r *recorder) Synchronize(_ context.Context, pods []*PodSandbox, ctrs []*Container) ([]*ContainerUpdate, error) {
	rec := record{Event: "Synchronize", Pods: len(pods), Containers: len(ctrs)}
	if len(pods) > 0 {
		rec.Pod = pj(pods[0])
		rec.LastPodID = pods[len(pods)-1].GetId()
	}
	if len(ctrs) > 0 {
		rec.Container = pj(ctrs[0])
		rec.LastCtrID = ctrs[len(ctrs)-1].GetId()
	}
	r.write(rec)
	return nil, nil
}

func (r *recorder) Shutdown(context.Context) { r.write(record{Event: "Shutdown"}) }

func (r *recorder) pod(ev string, pod *PodSandbox) error {
	r.write(record{Event: ev, Pod: pj(pod)})
	return nil
}

func (r *recorder) ctr(ev string, pod *PodSandbox, ctr *Container) error {
	r.write(record{Event: ev, Pod: pj(pod), Container: pj(ctr)})
	return nil
}

func (r *recorder) RunPodSandbox(_ context.Context, p *PodSandbox) error {
	return r.pod("RunPodSandbox", p)
}
func (r *recorder) StopPodSandbox(_ context.Context, p *PodSandbox) error {
	return r.pod("StopPodSandbox", p)
}
func (r *recorder) RemovePodSandbox(_ context.Context, p *PodSandbox) error {
	return r.pod("RemovePodSandbox", p)
}
func (r *recorder) PostUpdatePodSandbox(_ context.Context, p *PodSandbox) error {
	return r.pod("PostUpdatePodSandbox", p)
}

func (r *recorder) UpdatePodSandbox(_ context.Context, p *PodSandbox, overhead, res *LinuxResources) error {
	r.write(record{Event: "UpdatePodSandbox", Pod: pj(p), Overhead: pj(overhead), Resources: pj(res)})
	return nil
}

// scripted decodes the scripted message of part for container id into m;
// it reports whether there is one.
func (r *recorder) scripted(id string, part func(wire.ScriptEntry) json.RawMessage, m proto.Message) bool {
	r.mu.Lock()
	e, ok := r.script[id]
	r.mu.Unlock()
	if !ok || part(e) == nil {
		return false
	}
	if err := protojson.Unmarshal(part(e), m); err != nil {
		fmt.Fprintln(os.Stderr, "recplugin: bad script entry:", err)
		os.Exit(3)
	}
	return true
}

// createContainer records the request and answers with the script, or
// with the fixed adjustment of "adjust".
func (r *recorder) createContainer(p *PodSandbox, c *Container) (*ContainerAdjustment, []*ContainerUpdate, []*ContainerEviction, error) {
	r.ctr("CreateContainer", p, c)
	if req := (&UpdateContainersRequest{}); r.scripted(c.GetId(), func(e wire.ScriptEntry) json.RawMessage { return e.Unsolicited }, req) {
		go func() {
			failed, err := updateContainers(req.GetUpdate(), req.GetEvict())
			rec := record{Event: "UpdateContainers", Failed: len(failed), Container: pj(c)}
			if err != nil {
				rec.Error = err.Error()
			}
			r.write(rec)
		}()
	}
	if rsp := (&CreateContainerResponse{}); r.scripted(c.GetId(), func(e wire.ScriptEntry) json.RawMessage { return e.Create }, rsp) {
		return rsp.GetAdjust(), rsp.GetUpdate(), rsp.GetEvict(), nil
	}
	r.mu.Lock()
	adjust := r.cfg.Adjust
	r.mu.Unlock()
	if !adjust {
		return nil, nil, nil, nil
	}
	return &ContainerAdjustment{
		Annotations: map[string]string{"interop.nrinet.io/" + r.name: "yes"},
		Env:         []*KeyValue{{Key: "INTEROP_" + strings.ToUpper(strings.ReplaceAll(r.name, "-", "_")), Value: "1"}},
	}, nil, nil, nil
}

func (r *recorder) PostCreateContainer(_ context.Context, p *PodSandbox, c *Container) error {
	return r.ctr("PostCreateContainer", p, c)
}
func (r *recorder) StartContainer(_ context.Context, p *PodSandbox, c *Container) error {
	return r.ctr("StartContainer", p, c)
}
func (r *recorder) PostStartContainer(_ context.Context, p *PodSandbox, c *Container) error {
	return r.ctr("PostStartContainer", p, c)
}
func (r *recorder) PostUpdateContainer(_ context.Context, p *PodSandbox, c *Container) error {
	return r.ctr("PostUpdateContainer", p, c)
}
func (r *recorder) RemoveContainer(_ context.Context, p *PodSandbox, c *Container) error {
	return r.ctr("RemoveContainer", p, c)
}

// updateContainer records the request and answers with the script.
func (r *recorder) updateContainer(p *PodSandbox, c *Container, res *LinuxResources) ([]*ContainerUpdate, []*ContainerEviction, error) {
	r.write(record{Event: "UpdateContainer", Pod: pj(p), Container: pj(c), Resources: pj(res)})
	if rsp := (&UpdateContainerResponse{}); r.scripted(c.GetId(), func(e wire.ScriptEntry) json.RawMessage { return e.Update }, rsp) {
		return rsp.GetUpdate(), rsp.GetEvict(), nil
	}
	return nil, nil, nil
}

func (r *recorder) StopContainer(_ context.Context, p *PodSandbox, c *Container) ([]*ContainerUpdate, error) {
	r.ctr("StopContainer", p, c)
	return nil, nil
}

func main() {
	var (
		socket = flag.String("socket", "", "runtime socket (external plugins)")
		name   = flag.String("name", "", "plugin name (external plugins)")
		idx    = flag.String("idx", "", "plugin index (external plugins)")
		config = flag.String("config", "", "configuration JSON (external plugins)")
	)
	flag.Parse()
	rec := &recorder{name: *name}
	if rec.name == "" {
		rec.name = os.Getenv("NRI_PLUGIN_NAME")
	}
	if err := rec.setConfig(*config); err != nil {
		fmt.Fprintln(os.Stderr, "recplugin:", err)
		os.Exit(2)
	}
	if err := run(rec, *name, *idx, *socket); err != nil {
		fmt.Fprintln(os.Stderr, "recplugin:", err)
		os.Exit(1)
	}
}
