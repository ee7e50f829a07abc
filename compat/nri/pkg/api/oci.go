package api

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// This file converts the parts of an OCI runtime spec that are lists of
// objects (mounts, hooks, devices, namespaces, network devices) into NRI
// messages, as upstream does. Empty input gives nil, never an empty
// list; strings and slices are copied, never shared with the spec.

// FromOCIMounts returns the mounts of an OCI spec as NRI mounts.
func FromOCIMounts(o []rspec.Mount) []*Mount {
	var mounts []*Mount
	for _, m := range o {
		mounts = append(mounts, &Mount{
			Destination: m.Destination,
			Type:        m.Type,
			Source:      m.Source,
			Options:     DupStringSlice(m.Options),
		})
	}
	return mounts
}

// FromOCIHooks returns the hooks of an OCI spec as NRI hooks, or nil for
// nil.
func FromOCIHooks(o *rspec.Hooks) *Hooks {
	if o == nil {
		return nil
	}
	return &Hooks{
		Prestart:        FromOCIHookSlice(o.Prestart), //nolint:staticcheck // deprecated in the OCI spec, still carried by NRI
		CreateRuntime:   FromOCIHookSlice(o.CreateRuntime),
		CreateContainer: FromOCIHookSlice(o.CreateContainer),
		StartContainer:  FromOCIHookSlice(o.StartContainer),
		Poststart:       FromOCIHookSlice(o.Poststart),
		Poststop:        FromOCIHookSlice(o.Poststop),
	}
}

// FromOCIHookSlice returns OCI hooks as NRI hooks. A hook's timeout is
// carried only if the OCI hook has one.
func FromOCIHookSlice(o []rspec.Hook) []*Hook {
	var hooks []*Hook
	for _, h := range o {
		hooks = append(hooks, &Hook{
			Path:    h.Path,
			Args:    DupStringSlice(h.Args),
			Env:     DupStringSlice(h.Env),
			Timeout: Int(h.Timeout),
		})
	}
	return hooks
}

// FromOCILinuxDevices returns the Linux devices of an OCI spec as NRI
// devices. File mode, uid and gid are carried only if set.
func FromOCILinuxDevices(o []rspec.LinuxDevice) []*LinuxDevice {
	var devices []*LinuxDevice
	for _, d := range o {
		devices = append(devices, &LinuxDevice{
			Path:     d.Path,
			Type:     d.Type,
			Major:    d.Major,
			Minor:    d.Minor,
			FileMode: FileMode(d.FileMode),
			Uid:      UInt32(d.UID),
			Gid:      UInt32(d.GID),
		})
	}
	return devices
}

// FromOCILinuxNamespaces returns the Linux namespaces of an OCI spec as
// NRI namespaces.
func FromOCILinuxNamespaces(o []rspec.LinuxNamespace) []*LinuxNamespace {
	var namespaces []*LinuxNamespace
	for _, ns := range o {
		namespaces = append(namespaces, &LinuxNamespace{Type: string(ns.Type), Path: ns.Path})
	}
	return namespaces
}

// FromOCILinuxNetDevice returns an OCI network device as an NRI one.
func FromOCILinuxNetDevice(o rspec.LinuxNetDevice) *LinuxNetDevice {
	return &LinuxNetDevice{Name: o.Name}
}

// FromOCILinuxNetDevices returns the network devices of an OCI spec, keyed
// by host interface name, as NRI ones, or nil if there are none.
func FromOCILinuxNetDevices(o map[string]rspec.LinuxNetDevice) map[string]*LinuxNetDevice {
	if len(o) == 0 {
		return nil
	}
	devices := make(map[string]*LinuxNetDevice, len(o))
	for host, d := range o {
		devices[host] = FromOCILinuxNetDevice(d)
	}
	return devices
}

// ToOCILinuxNetDevices returns NRI network devices, keyed by host
// interface name, as OCI ones: nil for nil, and a nil device as the zero
// OCI device.
func ToOCILinuxNetDevices(devices map[string]*LinuxNetDevice) map[string]rspec.LinuxNetDevice {
	if devices == nil {
		return nil
	}
	o := make(map[string]rspec.LinuxNetDevice, len(devices))
	for host, d := range devices {
		o[host] = rspec.LinuxNetDevice{Name: d.GetName()}
	}
	return o
}
