package v1

import (
	"encoding/json"
	"errors"
)

// Plugin names an NRI 0.1 plugin executable and its configuration.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
type Plugin struct {
	// Type is the name of the plugin executable.
	Type string `json:"type"`
	// Conf is the plugin's own configuration, passed on in Request.Conf.
	Conf json.RawMessage `json:"conf,omitempty"`
}

// ConfigList is the NRI 0.1 configuration: the plugins to run, in order.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
type ConfigList struct {
	// Version is the version of the configuration.
	Version string `json:"version"`
	// Plugins are run in this order.
	Plugins []*Plugin `json:"plugins"`
}

// Spec is the part of a container's OCI spec an NRI 0.1 plugin sees.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
type Spec struct {
	// Resources are the OCI Linux or Windows resources, as JSON.
	Resources json.RawMessage `json:"resources"`
	// Namespaces maps namespace types to paths.
	Namespaces map[string]string `json:"namespaces,omitempty"`
	// CgroupsPath is the container's cgroup path.
	CgroupsPath string `json:"cgroupsPath,omitempty"`
	// Annotations are the OCI spec's annotations.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// State is the lifecycle event an NRI 0.1 request is about.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
type State string

// The events of NRI 0.1.
const (
	// Create is sent when a container or sandbox is created.
	Create State = "create"
	// Delete is sent when a container or sandbox is removed.
	Delete State = "delete"
	// Update is sent when a container's resources change.
	Update State = "update"
	// Pause is sent when a container is paused.
	Pause State = "pause"
	// Resume is sent when a container is resumed.
	Resume State = "resume"
)

// Request is what an NRI 0.1 plugin reads on stdin.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
type Request struct {
	// Conf is the plugin's configuration, from Plugin.Conf.
	Conf json.RawMessage `json:"conf,omitempty"`
	// Version is the version of the configuration list.
	Version string `json:"version"`
	// State is the event.
	State State `json:"state"`
	// ID is the container's id.
	ID string `json:"id"`
	// SandboxID is the id of the container's sandbox: equal to ID for a
	// sandbox, empty for a container without one.
	SandboxID string `json:"sandboxID,omitempty"`
	// Pid is the container's process id, -1 if it has none.
	Pid int `json:"pid,omitempty"`
	// Spec is taken from the container's OCI spec.
	Spec *Spec `json:"spec"`
	// Labels are the sandbox's labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Results are those of the plugins run before, in order.
	Results []*Result `json:"results,omitempty"`
}

// IsSandbox reports whether the request is about a sandbox (ID equals
// SandboxID).
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
func (r *Request) IsSandbox() bool {
	return r.ID == r.SandboxID
}

// NewResult returns an empty result of the named plugin for r, with r's
// version and an empty metadata map.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
func (r *Request) NewResult(plugin string) *Result {
	return &Result{Plugin: plugin, Version: r.Version, Metadata: map[string]string{}}
}

// Result is what an NRI 0.1 plugin writes on stdout.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
type Result struct {
	// Plugin is the name of the plugin that wrote the result.
	Plugin string `json:"plugin"`
	// Version is the version of the request.
	Version string `json:"version"`
	// Error is the plugin's error message, empty on success.
	Error string `json:"error"`
	// Metadata is what the plugin reports it did.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Err returns the result's error message as an error, or nil if there is
// none.
//
// Deprecated: NRI 0.1-style plugins should only be used through the
// v010-adapter plugin.
func (r *Result) Err() error {
	if r.Error == "" {
		return nil
	}
	return errors.New(r.Error)
}
