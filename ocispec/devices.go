package ocispec

import (
	"fmt"
	"os"
	"path"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
)

// deviceAccess is the access granted by the cgroup rule that accompanies
// an added device: read, write and mknod, as containerd grants for the
// devices it adds itself. (Upstream NRI grants "rw" to character and
// "rwm" to block devices.)
const deviceAccess = "rwm"

// prepareDevices validates the devices of an adjustment. A path marked
// with "-" removes the device at that path. Paths must be absolute; an
// added device must have type "c", "u", "b" or "p" and non-negative
// major and minor numbers.
func prepareDevices(devices []*api.LinuxDevice) (listEdit[rspec.LinuxDevice], error) {
	var e listEdit[rspec.LinuxDevice]
	for i, d := range devices {
		field := fmt.Sprintf("linux.devices[%d]", i)
		if d == nil {
			return e, invalid(field, "<nil>", "nil device")
		}
		p, removed := unmark(d.GetPath())
		if !path.IsAbs(p) {
			return e, invalid(field+".path", d.GetPath(), "not an absolute path")
		}
		if removed {
			e.remove = append(e.remove, api.EntryPath(p))
			continue
		}
		switch d.GetType() {
		case "c", "u", "b", "p":
		default:
			return e, invalid(field+".type", d.GetType(), `unknown device type (want "c", "u", "b" or "p")`)
		}
		if d.GetMajor() < 0 {
			return e, invalid(field+".major", d.GetMajor(), "negative device number")
		}
		if d.GetMinor() < 0 {
			return e, invalid(field+".minor", d.GetMinor(), "negative device number")
		}
		o := rspec.LinuxDevice{Path: p, Type: d.GetType(), Major: d.GetMajor(), Minor: d.GetMinor()}
		if m := d.GetFileMode(); m != nil {
			o.FileMode = ptr(os.FileMode(m.GetValue()))
		}
		if u := d.GetUid(); u != nil {
			o.UID = ptr(u.GetValue())
		}
		if g := d.GetGid(); g != nil {
			o.GID = ptr(g.GetValue())
		}
		e.add = append(e.add, o)
	}
	return e, nil
}

func deviceKey(d rspec.LinuxDevice) string { return api.EntryPath(d.Path) }

// deviceRule returns the device cgroup rule allowing access to d, and
// false for FIFOs, which the device controller does not govern.
func deviceRule(d rspec.LinuxDevice) (rspec.LinuxDeviceCgroup, bool) {
	t := d.Type
	switch t {
	case "u":
		t = "c"
	case "p":
		return rspec.LinuxDeviceCgroup{}, false
	}
	return rspec.LinuxDeviceCgroup{
		Allow:  true,
		Type:   t,
		Major:  ptr(d.Major),
		Minor:  ptr(d.Minor),
		Access: deviceAccess,
	}, true
}

// sameNode reports whether rule r is an allow rule for exactly the device
// node of d.
func sameNode(r, d rspec.LinuxDeviceCgroup) bool {
	return r.Allow && r.Type == d.Type &&
		r.Major != nil && r.Minor != nil && *r.Major == *d.Major && *r.Minor == *d.Minor
}

// applyDevices applies a device edit to spec.Linux.Devices and keeps the
// device cgroup rules in spec.Linux.Resources.Devices in step, as a
// runtime needs for the container to use its devices:
//
//   - every added device (unless a FIFO) gets an allow rule for its
//     type, major and minor with access "rwm", appended to the rules;
//   - for every removed or replaced device, the allow rules for exactly
//     its type, major and minor are deleted, unless another device kept
//     from the spec has the same node. Wildcard and deny rules are never
//     touched.
func applyDevices(spec *rspec.Spec, e listEdit[rspec.LinuxDevice]) {
	if e.empty() || (len(e.add) == 0 && spec.Linux == nil) {
		return
	}
	l := ensureLinux(spec)
	var dropped []rspec.LinuxDevice
	l.Devices, dropped = e.apply(l.Devices, deviceKey)

	added := make(map[string]bool, len(e.add))
	for _, d := range e.add {
		added[deviceKey(d)] = true
	}
	var stale []rspec.LinuxDeviceCgroup
	for _, d := range dropped {
		r, ok := deviceRule(d)
		if !ok {
			continue
		}
		inUse := false
		for _, k := range l.Devices {
			if added[deviceKey(k)] {
				continue // its rule is appended below
			}
			if kr, ok := deviceRule(k); ok && sameNode(kr, r) {
				inUse = true
				break
			}
		}
		if !inUse {
			stale = append(stale, r)
		}
	}
	if len(stale) > 0 && l.Resources != nil {
		kept := l.Resources.Devices[:0:0]
		for _, r := range l.Resources.Devices {
			drop := false
			for _, s := range stale {
				if sameNode(r, s) {
					drop = true
					break
				}
			}
			if !drop {
				kept = append(kept, r)
			}
		}
		l.Resources.Devices = kept
	}

	// Rules for the added devices that survived (a later add with the
	// same path replaces an earlier one), in the order they were given.
	for i, d := range e.add {
		if lastWithKey(e.add, i, deviceKey) {
			if r, ok := deviceRule(d); ok {
				res := ensureResources(spec)
				res.Devices = append(res.Devices, r)
			}
		}
	}
}

// lastWithKey reports whether list[i] is the last entry with its key.
func lastWithKey[T any](list []T, i int, key func(T) string) bool {
	k := key(list[i])
	for _, x := range list[i+1:] {
		if key(x) == k {
			return false
		}
	}
	return true
}
