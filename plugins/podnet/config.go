package podnet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nrinet/nrinet/ipam"
)

// Config is nri-podnet's configuration.
type Config struct {
	// Bridge is the host bridge pods attach to (default "nrinet0").
	Bridge string `json:"bridge"`
	// Subnets to allocate pod addresses from: one IPv4 and/or one IPv6.
	Subnets []string `json:"subnets"`
	// Exclude lists prefixes never handed out.
	Exclude []string `json:"exclude,omitempty"`
	// Gateways, one per subnet (default: the first host of each).
	Gateways []string `json:"gateways,omitempty"`
	// MTU of the pods' interfaces and the bridge (default 1500).
	MTU int `json:"mtu,omitempty"`
	// StateDir holds the allocator's database (default
	// "/var/lib/nri-podnet"). It is created with mode 0700; an existing
	// one that group or others may access, or with setuid, setgid or
	// sticky bits, is tightened to 0700, with a warning.
	StateDir string `json:"stateDir,omitempty"`
	// NoBridgeNetfilter leaves the bridge's nf_call_iptables and
	// nf_call_ip6tables as they are. By default nri-podnet turns them on,
	// so that bridged traffic between the pods passes the node's IPv4 and
	// IPv6 netfilter hooks (with br_netfilter): the replies of a Service
	// endpoint or of a host port's pod to a client pod on the same bridge
	// are then un-NATed (see the package documentation).
	NoBridgeNetfilter bool `json:"noBridgeNetfilter,omitempty"`
	// NoPortSecurity turns off port security (package portsec): pods may
	// then send with any MAC and source address, tagged frames and router
	// advertisements, past the node's NetworkPolicies. Only for pods that
	// must (a VM bridged inside a pod), on nodes whose pods are trusted.
	NoPortSecurity bool `json:"noPortSecurity,omitempty"`
	// NoLocalhostHostPorts makes host ports unreachable from the node's
	// own 127.0.0.1 (as they were before nri-podnet supported it). By
	// default a connection the node makes from 127.0.0.1 to
	// 127.0.0.1:HOSTPORT reaches the pod, as CRI's port mapping and the
	// CNI portmap plugin give it: while any pod has a host port, the
	// bridge (and no other interface) has route_localnet on, those
	// connections are masqueraded to the bridge's address, and every
	// packet to 127.0.0.0/8 or ::1 that comes in on an interface but lo
	// is dropped and counted (the CVE-2020-8558 guard); see package
	// hostport. With this setting none of it is done, and route_localnet
	// of the bridge is turned off at start. IPv6 has no route_localnet: a
	// connection from ::1 is not supported either way.
	NoLocalhostHostPorts bool `json:"noLocalhostHostPorts,omitempty"`
	// LogDenied, if set, logs the packets the node's NetworkPolicies
	// deny (nri-podnet -kube, with -network-policy): see [LogDenied].
	LogDenied *LogDenied `json:"logDenied,omitempty"`
}

// LogDenied is the logging of denied packets: before an isolated pod's
// chain drops a packet that no policy allows, the kernel sends it to an
// nflog group, at most at Rate for the whole node, and nri-podnet writes
// one line for it.
type LogDenied struct {
	// Rate bounds the lines, for the whole node: "N/second", "N/minute",
	// "N/hour" or "N/day", N from 1 (required).
	Rate string `json:"rate"`
	// Burst is how many lines may come at once beyond the rate, 0 to
	// 10,000 (0: 5, nft's default).
	Burst int `json:"burst,omitempty"`
	// Group is the nflog group the denied packets go to, 0 to 65535
	// (default 0); nri-podnet must be its only reader on the node.
	Group int `json:"group,omitempty"`
}

// Limit is Rate read: n packets per per (a second, minute, hour or day).
func (l LogDenied) Limit() (n uint64, per time.Duration, err error) {
	num, unit, ok := strings.Cut(l.Rate, "/")
	n, nerr := strconv.ParseUint(num, 10, 64)
	units := map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}
	per, uok := units[unit]
	if !ok || nerr != nil || n == 0 || !uok {
		return 0, 0, fmt.Errorf("podnet: logDenied: rate %q: want N/second, N/minute, N/hour or N/day, N from 1", l.Rate)
	}
	return n, per, nil
}

// Validate checks the rate, burst and group; errors quote the value.
func (l LogDenied) Validate() error {
	if _, _, err := l.Limit(); err != nil {
		return err
	}
	if l.Burst < 0 || l.Burst > 10000 {
		return fmt.Errorf("podnet: logDenied: burst %d is outside 0..10000", l.Burst)
	}
	if l.Group < 0 || l.Group > 65535 {
		return fmt.Errorf("podnet: logDenied: group %d is outside 0..65535", l.Group)
	}
	return nil
}

// Defaults.
const (
	DefaultBridge   = "nrinet0"
	DefaultMTU      = 1500
	DefaultStateDir = "/var/lib/nri-podnet"
)

// FromBytes parses and validates a JSON configuration, filling defaults.
func FromBytes(b []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("podnet: parsing configuration: %w", err)
	}
	if c.Bridge == "" {
		c.Bridge = DefaultBridge
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	return c, c.Validate()
}

// FromFile reads and parses a configuration file.
func FromFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("podnet: %w", err)
	}
	c, err := FromBytes(b)
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Validate checks the configuration; errors quote the bad value.
func (c Config) Validate() error {
	if len(c.Bridge) == 0 || len(c.Bridge) > 15 || bytes.ContainsAny([]byte(c.Bridge), "/: \t\n") {
		return fmt.Errorf("podnet: bridge name %q is not a valid interface name", c.Bridge)
	}
	if c.MTU < 68 || c.MTU > 65535 {
		return fmt.Errorf("podnet: MTU %d is outside 68..65535", c.MTU)
	}
	if c.StateDir == "" {
		return errors.New("podnet: empty stateDir")
	}
	if _, err := c.ipamConfig(); err != nil {
		return err
	}
	if c.LogDenied != nil {
		if err := c.LogDenied.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// ipamConfig returns the allocator configuration.
func (c Config) ipamConfig() (ipam.Config, error) {
	cfg, err := ipam.ParseConfig(c.Subnets, c.Exclude, c.Gateways)
	if err != nil {
		return cfg, fmt.Errorf("podnet: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("podnet: %w", err)
	}
	v4, v6 := 0, 0
	for _, s := range cfg.Subnets {
		if s.Addr().Is4() {
			v4++
		} else {
			v6++
		}
	}
	if v4 > 1 || v6 > 1 {
		return cfg, fmt.Errorf("podnet: at most one IPv4 and one IPv6 subnet, got %v", c.Subnets)
	}
	return cfg, nil
}
