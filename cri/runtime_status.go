package cri

import (
	"context"
	"encoding/json"
	"fmt"

	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version reports nrinetd: version "0.1.0" (which the kubelet requires),
// runtime name "nrinetd", the runtime version of WithRuntimeVersion, and
// runtime API version "v1".
func (s *Server) Version(context.Context, *criapi.VersionRequest) (*criapi.VersionResponse, error) {
	return &criapi.VersionResponse{
		Version:           CRIVersion,
		RuntimeName:       RuntimeName,
		RuntimeVersion:    s.cfg.runtimeVersion,
		RuntimeApiVersion: RuntimeAPIVersion,
	}, nil
}

// NetworkNotReadyReason is the reason of a false NetworkReady condition,
// as containerd names it.
const NetworkNotReadyReason = "NetworkPluginNotReady"

// Status reports RuntimeReady (always true while serving) and
// NetworkReady (false, with the missing plugins in the message, while a
// required network plugin is not connected). Verbose, Info holds "nri"
// (the joined plugins, with how often a launched one was restarted, and
// network readiness) and the entries of
// WithStatusInfo, each a JSON value.
func (s *Server) Status(ctx context.Context, req *criapi.StatusRequest) (*criapi.StatusResponse, error) {
	ready, why := s.rt.NetworkReady()
	netCond := &criapi.RuntimeCondition{Type: criapi.NetworkReady, Status: ready}
	if !ready {
		netCond.Reason, netCond.Message = NetworkNotReadyReason, why
	}
	rsp := &criapi.StatusResponse{
		Status: &criapi.RuntimeStatus{Conditions: []*criapi.RuntimeCondition{
			{Type: criapi.RuntimeReady, Status: true},
			netCond,
		}},
		RuntimeHandlers: []*criapi.RuntimeHandler{{Name: "", Features: &criapi.RuntimeHandlerFeatures{}}},
		Features:        &criapi.RuntimeFeatures{},
	}
	if !req.GetVerbose() {
		return rsp, nil
	}
	type pluginInfo struct {
		Name     string `json:"name"`
		Kind     string `json:"kind"`
		Pid      int    `json:"pid,omitempty"`
		Events   string `json:"events"`
		Restarts int    `json:"restarts,omitempty"`
	}
	nri := struct {
		NetworkReady bool         `json:"networkReady"`
		Reason       string       `json:"reason,omitempty"`
		Plugins      []pluginInfo `json:"plugins"`
	}{NetworkReady: ready, Reason: why, Plugins: []pluginInfo{}}
	for _, p := range s.rt.Plugins() {
		nri.Plugins = append(nri.Plugins, pluginInfo{Name: p.Name, Kind: p.Kind, Pid: p.Pid, Events: p.Events.String(), Restarts: p.Restarts})
	}
	entries := map[string]any{"nri": nri}
	for k, v := range s.cfg.info {
		entries[k] = v
	}
	rsp.Info = map[string]string{}
	for k, v := range entries {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, toStatus(fmt.Errorf("Status: encoding info %q: %w", k, err))
		}
		rsp.Info[k] = string(b)
	}
	return rsp, nil
}
