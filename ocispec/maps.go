package ocispec

import (
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
)

// The map-valued adjustments: annotations, sysctl and net devices. Each is
// applied as a mapEdit: removals ("-key") first, then sets, in sorted key
// order, so a key both removed and set always ends up set.

func prepareAnnotations(m map[string]string) (mapEdit[string], error) {
	return prepareMap("annotations", m, sameString)
}

func applyAnnotations(spec *rspec.Spec, e mapEdit[string]) {
	if !e.empty() {
		spec.Annotations = e.apply(spec.Annotations)
	}
}

func prepareSysctl(m map[string]string) (mapEdit[string], error) {
	return prepareMap("linux.sysctl", m, sameString)
}

func applySysctl(spec *rspec.Spec, e mapEdit[string]) {
	if e.empty() || (len(e.set) == 0 && spec.Linux == nil) {
		return
	}
	l := ensureLinux(spec)
	l.Sysctl = e.apply(l.Sysctl)
}

// prepareNetDevices validates net devices, keyed by host interface name.
// A nil device is taken as an empty one (keep the host name), which is
// also what an entry without value decodes to from the wire. Interface
// names must be valid Linux interface names.
func prepareNetDevices(m map[string]*api.LinuxNetDevice) (mapEdit[rspec.LinuxNetDevice], error) {
	return prepareMap("linux.net_devices", m, func(field, host string, d *api.LinuxNetDevice) (rspec.LinuxNetDevice, error) {
		if !validIfName(host) {
			return rspec.LinuxNetDevice{}, invalid(field, host, "not a valid interface name")
		}
		if n := d.GetName(); n != "" && !validIfName(n) {
			return rspec.LinuxNetDevice{}, invalid(field+".name", n, "not a valid interface name")
		}
		return rspec.LinuxNetDevice{Name: d.GetName()}, nil
	})
}

// validIfName reports whether s can name a Linux network interface: at
// most 15 bytes, not "." or "..", without "/", ":" or white space.
func validIfName(s string) bool {
	return len(s) <= 15 && s != "." && s != ".." && !strings.ContainsAny(s, "/: \t\n\v\f\r")
}

func applyNetDevices(spec *rspec.Spec, e mapEdit[rspec.LinuxNetDevice]) {
	if e.empty() || (len(e.set) == 0 && spec.Linux == nil) {
		return
	}
	l := ensureLinux(spec)
	l.NetDevices = e.apply(l.NetDevices)
}
