package ipam

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Smallest subnets the allocator accepts. A /30 holds one allocatable IPv4
// address (network, gateway and broadcast are reserved); a /126 holds two
// IPv6 addresses (the subnet-router anycast address and the gateway are
// reserved).
const (
	maxBitsIPv4 = 30
	maxBitsIPv6 = 126
)

// Config says which addresses an [Allocator] hands out. The zero value is
// not valid; see [Config.Validate]. Config is plain data, so it can be
// filled from JSON through [ParseConfig].
type Config struct {
	// Subnets lists the pod networks. Each owner gets one address from
	// each subnet, in this order. Prefixes must be masked (198.18.0.0/24,
	// not 198.18.0.1/24), must not overlap, and may mix IPv4 and IPv6
	// (dual-stack).
	Subnets []netip.Prefix

	// Exclude lists addresses that are never handed out, as masked
	// prefixes; a single address is a /32 or /128. Entries outside every
	// subnet are ignored.
	Exclude []netip.Prefix

	// Gateways optionally sets the gateway of a subnet. Each gateway must
	// lie inside one subnet, and a subnet has at most one. A subnet without
	// one uses its first host address (198.18.0.1, 2001:db8::1). Gateways
	// are never handed out.
	Gateways []netip.Addr
}

// Validate reports every problem with c, joined with [errors.Join]. Each
// one wraps [ErrInvalidConfig] and quotes the values involved, for example
// "ipam: invalid config: subnets 198.18.0.0/24 and 198.18.0.128/25 overlap".
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if len(c.Subnets) == 0 {
		bad("no subnets")
	}
	for i, p := range c.Subnets {
		switch {
		case !p.IsValid():
			bad("subnets[%d] is not a valid prefix", i)
		case p.Addr().Is4In6():
			bad("subnet %s is an IPv4-mapped IPv6 prefix; write it as IPv4", p)
		case p != p.Masked():
			bad("subnet %s is not masked (want %s)", p, p.Masked())
		case p.Addr().Is4() && p.Bits() > maxBitsIPv4:
			bad("subnet %s is too small (IPv4 prefix must be /%d or shorter)", p, maxBitsIPv4)
		case p.Addr().Is6() && p.Bits() > maxBitsIPv6:
			bad("subnet %s is too small (IPv6 prefix must be /%d or shorter)", p, maxBitsIPv6)
		}
		for _, q := range c.Subnets[:i] {
			if p.IsValid() && q.IsValid() && p.Overlaps(q) {
				bad("subnets %s and %s overlap", q, p)
			}
		}
	}
	for i, p := range c.Exclude {
		switch {
		case !p.IsValid():
			bad("exclude[%d] is not a valid prefix", i)
		case p != p.Masked():
			bad("exclude %s is not masked (want %s or %s)", p, p.Masked(), netip.PrefixFrom(p.Addr(), p.Addr().BitLen()))
		}
	}
	gwOf := map[netip.Prefix]netip.Addr{}
	for i, gw := range c.Gateways {
		if !gw.IsValid() {
			bad("gateways[%d] is not a valid address", i)
			continue
		}
		if gw.Zone() != "" {
			bad("gateway %s has a zone", gw)
			continue
		}
		s, ok := containing(c.Subnets, gw)
		switch {
		case !ok:
			bad("gateway %s is outside every subnet (%s)", gw, joinPrefixes(c.Subnets))
		case gw == s.Addr():
			bad("gateway %s is the network address of %s", gw, s)
		case gw.Is4() && gw == lastAddr(s):
			bad("gateway %s is the broadcast address of %s", gw, s)
		case gwOf[s].IsValid():
			bad("gateways %s and %s are both in subnet %s", gwOf[s], gw, s)
		default:
			gwOf[s] = gw
		}
	}
	return errors.Join(errs...)
}

// gateway returns the gateway of subnet s: the configured one, or the
// first host address.
func (c Config) gateway(s netip.Prefix) netip.Addr {
	for _, gw := range c.Gateways {
		if s.Contains(gw) {
			return gw
		}
	}
	return s.Addr().Next()
}

// ParseConfig builds a [Config] from strings, as they come from JSON, and
// validates it. Subnets are CIDR prefixes; Exclude entries are prefixes or
// single addresses; gateways are addresses. Surrounding blanks are ignored.
// Errors wrap [ErrInvalidConfig] and quote the offending string.
func ParseConfig(subnets, exclude, gateways []string) (Config, error) {
	var c Config
	var errs []error
	for i, s := range subnets {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: subnets[%d] %q: %w", ErrInvalidConfig, i, s, unwrapParse(err)))
			continue
		}
		c.Subnets = append(c.Subnets, p)
	}
	for i, s := range exclude {
		p, err := parsePrefixOrAddr(strings.TrimSpace(s))
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: exclude[%d] %q: %w", ErrInvalidConfig, i, s, unwrapParse(err)))
			continue
		}
		c.Exclude = append(c.Exclude, p)
	}
	for i, s := range gateways {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: gateways[%d] %q: %w", ErrInvalidConfig, i, s, unwrapParse(err)))
			continue
		}
		c.Gateways = append(c.Gateways, a)
	}
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parsePrefixOrAddr parses "198.18.0.0/28" or "198.18.0.5" (as /32).
func parsePrefixOrAddr(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a.Zone() != "" {
		return netip.Prefix{}, errors.New("address has a zone")
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// unwrapParse drops the `netip.ParseX("...")` head of a netip parse error,
// whose input the caller already quotes, keeping the reason.
func unwrapParse(err error) error {
	msg := err.Error()
	if strings.HasPrefix(msg, "netip.Parse") {
		if i := strings.Index(msg, "): "); i >= 0 {
			return errors.New(msg[i+3:])
		}
	}
	return err
}

func containing(subnets []netip.Prefix, a netip.Addr) (netip.Prefix, bool) {
	for _, s := range subnets {
		if s.IsValid() && s.Contains(a) {
			return s, true
		}
	}
	return netip.Prefix{}, false
}

func joinPrefixes(ps []netip.Prefix) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}
