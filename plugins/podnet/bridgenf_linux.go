package podnet

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// bridgeNetfilter turns on the bridge's own nf_call_iptables and
// nf_call_ip6tables (IFLA_BR_NF_CALL_IPTABLES, IFLA_BR_NF_CALL_IP6TABLES):
// with br_netfilter, IPv4 and IPv6 traffic bridged between its ports then
// passes the netfilter hooks, conntrack and NAT, as it does on any bridge
// when the network namespace's net.bridge.bridge-nf-call-iptables and
// -ip6tables are 1. Only this bridge is affected; the sysctls stay as they
// are. It logs a change. Equivalent to:
//
//	ip link set $bridge type bridge nf_call_iptables 1 nf_call_ip6tables 1
func bridgeNetfilter(br netlink.Link, log *slog.Logger) error {
	v4, v6, err := bridgeNFCall(br.Attrs().Index)
	if errors.Is(err, errNoBridgeNetfilter) {
		log.Warn("cannot make bridged pod traffic pass netfilter: a Service's or host port's reply to a client pod on the same bridge is not un-NATed",
			"bridge", br.Attrs().Name, "error", err)
		return nil
	}
	if err != nil {
		return err
	}
	if v4 && v6 {
		return nil
	}
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(br.Attrs().Index)
	req.AddData(msg)
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("bridge"))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(nl.IFLA_BR_NF_CALL_IPTABLES, []byte{1})
	data.AddRtAttr(nl.IFLA_BR_NF_CALL_IP6TABLES, []byte{1})
	req.AddData(info)
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		return fmt.Errorf("turning nf_call_iptables and nf_call_ip6tables on: %w", err)
	}
	log.Info("bridged pod traffic now passes netfilter (the bridge's nf_call_iptables and nf_call_ip6tables), for Services and host ports between pods of the bridge",
		"bridge", br.Attrs().Name, "nfCallIptablesWas", v4, "nfCallIp6tablesWas", v6)
	return nil
}

// errNoBridgeNetfilter: a kernel without CONFIG_BRIDGE_NETFILTER.
var errNoBridgeNetfilter = errors.New("the kernel reports no nf_call_iptables for the bridge (a kernel without CONFIG_BRIDGE_NETFILTER)")

// bridgeNFCall reads the bridge's nf_call_iptables and nf_call_ip6tables.
// Equivalent to: ip -d link show dev $bridge
func bridgeNFCall(index int) (v4, v6 bool, err error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil {
		return false, false, fmt.Errorf("reading bridge %d: %w", index, err)
	}
	if len(msgs) != 1 || len(msgs[0]) < unix.SizeofIfInfomsg {
		return false, false, fmt.Errorf("reading bridge %d: %d answers", index, len(msgs))
	}
	attrs, err := nl.ParseRouteAttr(msgs[0][unix.SizeofIfInfomsg:])
	if err != nil {
		return false, false, fmt.Errorf("reading bridge %d: %w", index, err)
	}
	found := false
	for _, a := range attrs {
		if a.Attr.Type&^unix.NLA_F_NESTED != unix.IFLA_LINKINFO {
			continue
		}
		infos, err := nl.ParseRouteAttr(a.Value)
		if err != nil {
			return false, false, err
		}
		for _, i := range infos {
			if i.Attr.Type&^unix.NLA_F_NESTED != nl.IFLA_INFO_DATA {
				continue
			}
			data, err := nl.ParseRouteAttr(i.Value)
			if err != nil {
				return false, false, err
			}
			for _, d := range data {
				switch d.Attr.Type {
				case nl.IFLA_BR_NF_CALL_IPTABLES:
					v4, found = len(d.Value) > 0 && d.Value[0] != 0, true
				case nl.IFLA_BR_NF_CALL_IP6TABLES:
					v6 = len(d.Value) > 0 && d.Value[0] != 0
				}
			}
		}
	}
	if !found {
		return false, false, errNoBridgeNetfilter
	}
	return v4, v6, nil
}
