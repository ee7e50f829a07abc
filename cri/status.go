package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/api"
)

// PodSandboxStatus reports a sandbox. The addresses come from the stored
// network record, refreshed from the plugins for READY sandboxes (the
// runtime library keeps the last known part of a plugin that fails, and a
// failed refresh reports the stored record); a changed record is
// persisted. Verbose, Info holds one key, "info": a JSON object with the
// namespace and the network with the plugin that set each part. An
// unknown ID is gRPC NotFound.
func (s *Server) PodSandboxStatus(ctx context.Context, req *criapi.PodSandboxStatusRequest) (*criapi.PodSandboxStatusResponse, error) {
	id, err := s.store.resolve(req.GetPodSandboxId())
	if err != nil {
		return nil, toStatus(fmt.Errorf("PodSandboxStatus: %w", err))
	}
	sb, rec, err := s.store.get(id)
	if err != nil {
		return nil, toStatus(fmt.Errorf("PodSandboxStatus: %w", err))
	}
	if sb.ready() && !sb.HostNetwork {
		rec = s.refresh(ctx, sb, rec, req.GetVerbose())
	}
	rsp := &criapi.PodSandboxStatusResponse{Status: sb.status(rec)}
	if req.GetVerbose() {
		info, err := json.Marshal(newSandboxInfo(sb, rec))
		if err != nil {
			return nil, toStatus(fmt.Errorf("PodSandboxStatus %s: encoding info: %w", id, err))
		}
		rsp.Info = map[string]string{"info": string(info)}
	}
	return rsp, nil
}

// refresh asks the plugins for the sandbox's network, starting from last,
// and persists the result if it changed and nothing else changed the
// stored record meanwhile.
func (s *Server) refresh(ctx context.Context, sb *sandbox, last *api.PodNetworkRecord, verbose bool) *api.PodNetworkRecord {
	start := time.Now()
	rec, err := s.rt.PodSandboxStatus(ctx, sb.nriPod(last.GetNetwork().GetIps()), last, verbose)
	s.metrics.observeHook(eventStatus, start, err)
	if err != nil {
		s.log.Warn("refreshing the pod network failed; reporting the stored one", "sandbox", sb.ID, "error", err)
		return last
	}
	s.metrics.observeStale(rec.GetStale())
	if proto.Equal(rec, last) || (verbose && proto.Equal(withoutInfo(rec), withoutInfo(last))) {
		// A verbose answer carries checks made for this request (info);
		// storing those would make every later plain answer look like a
		// change. Only changed addresses, interfaces, routes or DNS count.
		return rec
	}
	err = s.store.update(sb.ID, func(cur *sandbox, stored *api.PodNetworkRecord) (*api.PodNetworkRecord, error) {
		if !cur.ready() || !proto.Equal(stored, last) {
			return nil, errSkip // stopped, or a plugin pushed an update
		}
		return rec, nil
	})
	if err != nil {
		s.log.Warn("persisting the refreshed pod network", "sandbox", sb.ID, "error", err)
	}
	return rec
}

// sandboxInfo is the verbose status info of a sandbox.
type sandboxInfo struct {
	NetNS       string            `json:"netns"`
	HostNetwork bool              `json:"hostNetwork"`
	NRIStopped  bool              `json:"nriStopped"`
	IPs         []ownedIP         `json:"ips"`
	Interfaces  []ownedInterface  `json:"interfaces"`
	Routes      []ownedRoute      `json:"routes"`
	DNS         *ownedDNS         `json:"dns,omitempty"`
	Info        map[string]string `json:"info,omitempty"`
	Stale       map[string]string `json:"stale"`
	Owners      map[string]string `json:"owners"`
}

type ownedIP struct {
	IP    string `json:"ip"`
	Owner string `json:"owner,omitempty"`
}

type ownedInterface struct {
	Name      string   `json:"name"`
	MAC       string   `json:"mac,omitempty"`
	Addresses []string `json:"addresses"`
	MTU       uint32   `json:"mtu,omitempty"`
	Owner     string   `json:"owner,omitempty"`
}

type ownedRoute struct {
	Destination string `json:"destination"`
	Gateway     string `json:"gateway,omitempty"`
	Interface   string `json:"interface,omitempty"`
	Owner       string `json:"owner,omitempty"`
}

type ownedDNS struct {
	Servers  []string `json:"servers,omitempty"`
	Searches []string `json:"searches,omitempty"`
	Options  []string `json:"options,omitempty"`
	Owner    string   `json:"owner,omitempty"`
}

func newSandboxInfo(sb *sandbox, rec *api.PodNetworkRecord) sandboxInfo {
	owners := rec.GetOwners()
	n := rec.GetNetwork()
	info := sandboxInfo{
		NetNS:       sb.NetNSPath,
		HostNetwork: sb.HostNetwork,
		NRIStopped:  sb.NRIStopped,
		IPs:         []ownedIP{},
		Interfaces:  []ownedInterface{},
		Routes:      []ownedRoute{},
		Info:        n.GetInfo(),
		Stale:       rec.GetStale(),
		Owners:      owners,
	}
	if info.Stale == nil {
		info.Stale = map[string]string{}
	}
	if info.Owners == nil {
		info.Owners = map[string]string{}
	}
	for _, ip := range n.GetIps() {
		o := ownedIP{IP: ip}
		if a, err := netip.ParseAddr(ip); err == nil {
			o.Owner = owners[api.FamilyOwnerKey(a)]
		}
		info.IPs = append(info.IPs, o)
	}
	for _, itf := range n.GetInterfaces() {
		info.Interfaces = append(info.Interfaces, ownedInterface{
			Name: itf.GetName(), MAC: itf.GetMac(), Addresses: append([]string{}, itf.GetAddresses()...),
			MTU: itf.GetMtu(), Owner: owners[api.OwnerInterface(itf.GetName())],
		})
	}
	for _, r := range n.GetRoutes() {
		info.Routes = append(info.Routes, ownedRoute{
			Destination: r.GetDestination(), Gateway: r.GetGateway(), Interface: r.GetInterface(),
			Owner: owners[api.OwnerRoute(r.GetDestination())],
		})
	}
	if d := n.GetDns(); d != nil {
		info.DNS = &ownedDNS{Servers: d.GetServers(), Searches: d.GetSearches(), Options: d.GetOptions(), Owner: owners[api.OwnerDNS]}
	}
	return info
}

// withoutInfo returns a copy of rec without the info maps, for comparing
// what a plugin reported apart from its details.
func withoutInfo(rec *api.PodNetworkRecord) *api.PodNetworkRecord {
	out := proto.CloneOf(rec)
	if out == nil {
		return nil
	}
	if out.Network != nil {
		out.Network.Info = nil
	}
	for k, n := range out.GetPlugins() {
		if n.GetInfo() != nil {
			n.Info = nil
			out.Plugins[k] = n
		}
	}
	for k := range out.GetOwners() {
		if strings.HasPrefix(k, "info/") {
			delete(out.Owners, k)
		}
	}
	return out
}
