package kube

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
)

// Forwarding switches of the calling thread's network namespace.
const (
	forwardIPv4 = "/proc/sys/net/ipv4/ip_forward"
	forwardIPv6 = "/proc/sys/net/ipv6/conf/all/forwarding"
)

// ensureForwarding turns IP forwarding on for the families asked for, in
// the network namespace of the calling thread, if it is off, and logs
// each change. Nothing is ever turned off.
func ensureForwarding(log *slog.Logger, v4, v6 bool) (changed bool, err error) {
	var errs []error
	for _, f := range []struct {
		on   bool
		path string
	}{{v4, forwardIPv4}, {v6, forwardIPv6}} {
		if !f.on {
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			errs = append(errs, fmt.Errorf("kube: reading %s: %w", f.path, err))
			continue
		}
		if v := bytes.TrimSpace(b); string(v) == "1" {
			continue
		}
		if err := os.WriteFile(f.path, []byte("1\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("kube: turning forwarding on (%s was %q): %w; pods cannot reach other nodes or the outside until it is 1",
				f.path, bytes.TrimSpace(b), err))
			continue
		}
		changed = true
		log.Info("turned IP forwarding on", "sysctl", f.path, "was", string(bytes.TrimSpace(b)))
	}
	return changed, errors.Join(errs...)
}
