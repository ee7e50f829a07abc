package cni

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// setLoopbackUp sets the loopback interface of the network namespace at
// path up, as containerd does with use_internal_loopback.
//
// Equivalent to: ip -n NS link set lo up
func setLoopbackUp(path string) error {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in network namespace %s: %w", path, err)
	}
	defer h.Close()
	lo, err := h.LinkByName(LoopbackIfName)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("network namespace %s: setting lo up: %w", path, err)
	}
	return nil
}
