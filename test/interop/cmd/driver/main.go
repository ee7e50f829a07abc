// Command driver is an NRI runtime for the interop tests: it serves the NRI
// socket (and launches pre-installed plugins), synchronizes joining plugins
// with a generated state, and on the command "run" sends every pod and
// container lifecycle event with the golden pod and container of
// testdata/, printing each result as a JSON line. It is built twice from
// the same source: on the nrinet runtime library (default) and, with the
// build tag "upstream", on containerd/nri's adaptation.
//
// Protocol on stdin/stdout: the driver prints {"step":"ready"} once
// listening; "run" sends the events ({"step":"result",...} per event, then
// {"step":"done"}); "runpod" sends only RunPodSandbox and prints its
// result; "create FILE" and "update FILE" send one
// CreateContainerRequest or UpdateContainerRequest read from FILE
// (protojson) and print its result; "quit" or end of input stops the
// runtime and exits. Container updates and evictions plugins ask for
// outside requests are printed as {"step":"update"} and {"step":"evict"}
// lines, one per container.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/test/interop/internal/wire"
)

type line = wire.Line

var outMu sync.Mutex

func emit(l line) {
	b, _ := json.Marshal(l)
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

var pj = wire.JSON

func load(dir, name string, m proto.Message) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err == nil {
		err = protojson.Unmarshal(b, m)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "driver: loading %s: %v\n", name, err)
		os.Exit(2)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func main() {
	var (
		socket    = flag.String("socket", "", "NRI socket to listen on")
		pluginDir = flag.String("plugin-dir", "", "pre-installed plugin directory")
		confDir   = flag.String("conf-dir", "", "plugin configuration directory")
		golden    = flag.String("golden", "testdata", "directory of pod.json, container.json, resources.json")
		nPods     = flag.Int("pods", 3, "pods in the synchronized state")
		nCtrs     = flag.Int("containers", 5, "containers in the synchronized state")
	)
	flag.Parse()

	pod, ctr, res := &PodSandbox{}, &Container{}, &LinuxResources{}
	load(*golden, "pod.json", pod)
	load(*golden, "container.json", ctr)
	load(*golden, "resources.json", res)
	var pods []*PodSandbox
	var ctrs []*Container
	for i := range *nPods {
		p := proto.Clone(pod).(*PodSandbox)
		p.Id = fmt.Sprintf("sync-pod-%d", i)
		pods = append(pods, p)
	}
	for i := range *nCtrs {
		c := proto.Clone(ctr).(*Container)
		c.Id = fmt.Sprintf("sync-ctr-%d", i)
		c.PodSandboxId = pods[i%len(pods)].GetId()
		ctrs = append(ctrs, c)
	}

	d, err := newDriver(*socket, *pluginDir, *confDir, pods, ctrs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
	emit(line{Step: "ready"})
	ctx := context.Background()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		verb, file, _ := strings.Cut(in.Text(), " ")
		switch verb {
		case "create":
			d.awaitSync()
			req := &CreateContainerRequest{}
			load("", file, req)
			rsp, err := d.CreateContainer(ctx, req)
			emit(resultLine("CreateContainer", rsp, err, nil))
		case "update":
			d.awaitSync()
			req := &UpdateContainerRequest{}
			load("", file, req)
			rsp, err := d.UpdateContainer(ctx, req)
			emit(resultLine("UpdateContainer", rsp, err, rsp.GetUpdate()))
		case "runpod":
			d.awaitSync()
			emit(line{Step: "result", Event: "RunPodSandbox", Error: errText(d.RunPodSandbox(ctx, &RunPodSandboxRequest{Pod: pod}))})
		case "run":
			d.awaitSync()
			runEvents(ctx, d, pod, ctr, res)
			emit(line{Step: "done"})
		case "quit":
			d.stop()
			emit(line{Step: "stopped"})
			return
		}
	}
	d.stop()
	emit(line{Step: "stopped"})
}

// resultLine is the line of one request's result; updates is the
// response's update list, whose nil entries it notes.
func resultLine(ev string, rsp proto.Message, err error, updates []*ContainerUpdate) line {
	l := line{Step: "result", Event: ev, Error: errText(err), Response: pj(rsp), Proto: wire.Binary(rsp)}
	for i, u := range updates {
		if u == nil {
			l.NilUpdates = append(l.NilUpdates, i)
		}
	}
	return l
}

// runEvents sends every lifecycle event once, in a pod's natural order.
func runEvents(ctx context.Context, d *driver, pod *PodSandbox, ctr *Container, res *LinuxResources) {
	result := func(ev string, rsp proto.Message, err error) {
		emit(line{Step: "result", Event: ev, Error: errText(err), Response: pj(rsp)})
	}
	result("RunPodSandbox", nil, d.RunPodSandbox(ctx, &RunPodSandboxRequest{Pod: pod}))
	_, err := d.UpdatePodSandbox(ctx, &UpdatePodSandboxRequest{Pod: pod, OverheadLinuxResources: res, LinuxResources: res})
	result("UpdatePodSandbox", nil, err)
	result("PostUpdatePodSandbox", nil, d.PostUpdatePodSandbox(ctx, &PostUpdatePodSandboxRequest{Pod: pod}))
	crsp, err := d.CreateContainer(ctx, &CreateContainerRequest{Pod: pod, Container: proto.Clone(ctr).(*Container)})
	result("CreateContainer", crsp, err)
	result("PostCreateContainer", nil, d.PostCreateContainer(ctx, &PostCreateContainerRequest{Pod: pod, Container: ctr}))
	result("StartContainer", nil, d.StartContainer(ctx, &StartContainerRequest{Pod: pod, Container: ctr}))
	result("PostStartContainer", nil, d.PostStartContainer(ctx, &PostStartContainerRequest{Pod: pod, Container: ctr}))
	ursp, err := d.UpdateContainer(ctx, &UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: res})
	result("UpdateContainer", ursp, err)
	result("PostUpdateContainer", nil, d.PostUpdateContainer(ctx, &PostUpdateContainerRequest{Pod: pod, Container: ctr}))
	srsp, err := d.StopContainer(ctx, &StopContainerRequest{Pod: pod, Container: ctr})
	result("StopContainer", srsp, err)
	result("RemoveContainer", nil, d.RemoveContainer(ctx, &RemoveContainerRequest{Pod: pod, Container: ctr}))
	result("StopPodSandbox", nil, d.StopPodSandbox(ctx, &StopPodSandboxRequest{Pod: pod}))
	result("RemovePodSandbox", nil, d.RemovePodSandbox(ctx, &RemovePodSandboxRequest{Pod: pod}))
	d.extensionEvents(ctx, pod, result)
}
