package containerde2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nrinet/nrinet/internal/testutil"
)

// crictl runs crictl against the instance, with its own configuration
// file (so /etc/crictl.yaml is never read), and returns its standard
// output and error.
func (c *containerd) crictl(args ...string) (string, string, error) {
	return c.cri.Run(args...)
}

// must runs crictl and fails the test if it fails.
func (c *containerd) must(args ...string) string {
	c.t.Helper()
	return c.cri.Must(c.t, args...)
}

// writeJSON writes v as JSON to name in c.dir and returns the path.
func (c *containerd) writeJSON(name string, v any) string {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	path := filepath.Join(c.dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// A pod is a pod sandbox the test ran, with one busybox container.
type pod struct {
	name      string
	id        string // sandbox ID
	container string // the container's name
	ctrID     string // the container's ID
	// netns is the pod's network namespace (from crictl inspectp).
	netns string
	// veths are the host interfaces its creation attached to the
	// instance's bridges: the host ends of its veths.
	veths []string
}

// runPod runs a pod sandbox named name with one busybox container named
// container that sleeps, through crictl runp, create and start, and
// records the IDs, the network namespace and the pod's host veths for the
// leak check.
func (c *containerd) runPod(name, container string) *pod {
	c.t.Helper()
	p, podFile := c.runSandbox(name)
	p.container = container
	ctrFile := c.writeJSON("ctr-"+name+".json", c.containerConfig(container))
	p.ctrID = strings.TrimSpace(c.must("create", p.id, ctrFile, podFile))
	c.seen.add(p.ctrID)
	c.must("start", p.ctrID)
	return p
}

// runSandbox runs a pod sandbox named name, without containers, through
// crictl runp, records its ID, network namespace and host veths for the
// leak check, and returns it with the path of its configuration (which
// crictl create needs too).
func (c *containerd) runSandbox(name string) (p *pod, podFile string) {
	c.t.Helper()
	podFile = c.writeJSON("pod-"+name+".json", c.podConfig(name))
	var portsBefore []string
	for _, br := range c.scope().bridges {
		portsBefore = append(portsBefore, bridgePorts(c.t, br)...)
	}
	p = &pod{name: name}
	p.id = strings.TrimSpace(c.must("runp", podFile))
	c.seen.add(p.id)
	p.netns = c.inspectp(p.id).Info.RuntimeSpec.netns()
	c.seen.addNetNS(p.netns)
	for _, br := range c.scope().bridges {
		ports := bridgePorts(c.t, br)
		for _, port := range ports {
			if !slices.Contains(portsBefore, port) {
				p.veths = append(p.veths, port)
			}
		}
		c.seen.addVeths(ports)
	}
	return p, podFile
}

// podConfig is the CRI configuration of a pod named name.
func (c *containerd) podConfig(name string) map[string]any {
	return map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": "nrinet-e2e", "uid": name + "-" + c.token, "attempt": 0},
		"hostname":      name,
		"log_directory": filepath.Join(c.dir, "logs", name),
		"linux":         map[string]any{"cgroup_parent": c.podCgroupParent()},
	}
}

// containerConfig is the CRI configuration of a busybox container named
// name that sleeps, in the instance's busybox image.
func (c *containerd) containerConfig(name string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": name},
		"image":    map[string]any{"image": c.images()[1].ref},
		"command":  []string{"sleep", "3600"},
		"log_path": name + ".log",
		"linux":    map[string]any{},
	}
}

// exec runs a command in the pod's container (crictl exec --sync) and
// returns its output; a failure fails the test.
func (c *containerd) exec(p *pod, cmd ...string) string {
	c.t.Helper()
	out, errOut, err := c.crictl(append([]string{"exec", "--sync", "--timeout", "10", p.ctrID}, cmd...)...)
	if err != nil {
		c.t.Fatalf("crictl exec in %s (pod %s): %s: %v\n%s%s", p.container, p.name, strings.Join(cmd, " "), err, out, errOut)
	}
	return out
}

// podInspection is what the tests read of crictl inspectp -o json.
type podInspection struct {
	testutil.PodStatus
	Info struct {
		RuntimeSpec runtimeSpec `json:"runtimeSpec"`
	} `json:"info"`
}

// runtimeSpec is what the tests read of an OCI runtime spec.
type runtimeSpec struct {
	Annotations map[string]string `json:"annotations"`
	Linux       struct {
		Namespaces []struct {
			Type string `json:"type"`
			Path string `json:"path"`
		} `json:"namespaces"`
	} `json:"linux"`
}

// netns returns the spec's network namespace path.
func (s runtimeSpec) netns() string {
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == "network" {
			return ns.Path
		}
	}
	return ""
}

// inspectp runs crictl inspectp -o json.
func (c *containerd) inspectp(id string) podInspection {
	c.t.Helper()
	var i podInspection
	out := c.must("inspectp", "-o", "json", id)
	if err := json.Unmarshal([]byte(out), &i); err != nil {
		c.t.Fatalf("crictl inspectp output: %v\n%s", err, out)
	}
	return i
}

// inspectSpec returns a container's OCI runtime spec (crictl inspect).
func (c *containerd) inspectSpec(id string) runtimeSpec {
	c.t.Helper()
	var i struct {
		Info struct {
			RuntimeSpec runtimeSpec `json:"runtimeSpec"`
		} `json:"info"`
	}
	out := c.must("inspect", "-o", "json", id)
	if err := json.Unmarshal([]byte(out), &i); err != nil {
		c.t.Fatalf("crictl inspect output: %v\n%s", err, out)
	}
	return i.Info.RuntimeSpec
}
