package cni

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/nrinet/nrinet/api"
)

// Info keys of the networks this plugin reports.
const (
	// InfoNetwork is the CNI network's name.
	InfoNetwork = "cni.nrinet.io/network"
	// InfoCNIVersion is the cniVersion of the network's configuration.
	InfoCNIVersion = "cni.nrinet.io/cni-version"
	// InfoCheck is the outcome of CHECK in a verbose PodSandboxStatus.
	InfoCheck = "cni.nrinet.io/check"
)

// convertResult turns a CNI result into the pod's network as the contract
// wants it, normalized:
//
//   - interfaces: those whose sandbox is the pod's netns, with name, MAC,
//     MTU (0 if unknown) and their addresses as CIDRs;
//   - ips: the addresses of those interfaces, and addresses not tied to an
//     interface, as bare IPs; addresses of host-side interfaces are left out;
//   - routes: destination and gateway, with the interface when the pod has
//     exactly one (CNI routes name none); the first route to a destination wins;
//   - dns: nameservers, search domains (the domain first), options;
//   - info: InfoNetwork and InfoCNIVersion.
func convertResult(r types.Result, netns string, list *libcni.NetworkConfigList) (*api.PodSandboxNetwork, error) {
	res, err := current.NewResultFromResult(r)
	if err != nil {
		return nil, fmt.Errorf("converting the CNI result to version %s: %w", current.ImplementedSpecVersion, err)
	}
	n := &api.PodSandboxNetwork{Info: map[string]string{
		InfoNetwork:    list.Name,
		InfoCNIVersion: list.CNIVersion,
	}}
	inPod := map[int]*api.NetworkInterface{}
	for i, itf := range res.Interfaces {
		if itf == nil || itf.Sandbox == "" || filepath.Clean(itf.Sandbox) != filepath.Clean(netns) {
			continue
		}
		ni := &api.NetworkInterface{Name: itf.Name, Mac: itf.Mac}
		if itf.Mtu > 0 && itf.Mtu <= 65535 {
			ni.Mtu = uint32(itf.Mtu)
		}
		inPod[i] = ni
		n.Interfaces = append(n.Interfaces, ni)
	}
	for _, ipc := range res.IPs {
		if ipc == nil || ipc.Address.IP == nil {
			continue
		}
		if ipc.Interface != nil {
			ni, ok := inPod[*ipc.Interface]
			if !ok {
				continue
			}
			ni.Addresses = appendUnique(ni.Addresses, ipc.Address.String())
		}
		n.Ips = appendUnique(n.Ips, ipc.Address.IP.String())
	}
	var ifName string
	if len(n.Interfaces) == 1 {
		ifName = n.Interfaces[0].Name
	}
	seen := map[string]bool{}
	for _, rt := range res.Routes {
		if rt == nil || rt.Dst.IP == nil || rt.Dst.Mask == nil {
			continue
		}
		dst := (&net.IPNet{IP: rt.Dst.IP.Mask(rt.Dst.Mask), Mask: rt.Dst.Mask}).String()
		if seen[dst] {
			continue
		}
		seen[dst] = true
		nr := &api.NetworkRoute{Destination: dst, Interface: ifName}
		if rt.GW != nil {
			nr.Gateway = rt.GW.String()
		}
		n.Routes = append(n.Routes, nr)
	}
	n.Dns = convertDNS(res.DNS)
	out, err := api.NormalizeNetwork(n)
	if err != nil {
		return nil, fmt.Errorf("the CNI result is not a valid pod network: %w", err)
	}
	return out, nil
}

func convertDNS(d types.DNS) *api.NetworkDNS {
	out := &api.NetworkDNS{}
	for _, s := range d.Nameservers {
		if s != "" {
			out.Servers = appendUnique(out.Servers, s)
		}
	}
	for _, s := range append([]string{d.Domain}, d.Search...) {
		if s != "" {
			out.Searches = appendUnique(out.Searches, s)
		}
	}
	for _, s := range d.Options {
		if s != "" {
			out.Options = appendUnique(out.Options, s)
		}
	}
	if len(out.Servers)+len(out.Searches)+len(out.Options) == 0 {
		return nil
	}
	return out
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
