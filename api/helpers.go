package api

import (
	"maps"
	"slices"
	"strings"
)

// Small helpers with the names and signatures of containerd/nri's pkg/api.
// Of upstream's conversions to and from OCI runtime-spec types (ToOCI,
// FromOCI*), only those a supported runtime calls are here (oci.go), with
// KeyValue.ToOCI and FromOCIEnv, which need no runtime-spec type; package
// ocispec applies adjustments and updates to an OCI Spec.

const (
	// SELinuxRelabel is a Mount pseudo-option asking the runtime to relabel
	// the mount source for SELinux.
	SELinuxRelabel = "relabel"

	// UnlimitedPidsLimit is the LinuxPids limit meaning "no limit".
	UnlimitedPidsLimit = -1
)

// DupStringSlice returns a copy of in; nil stays nil.
func DupStringSlice(in []string) []string { return slices.Clone(in) }

// DupStringMap returns a copy of in; nil stays nil.
func DupStringMap(in map[string]string) map[string]string { return maps.Clone(in) }

// IsMarkedForRemoval returns the container path of m without its removal
// marker and whether m asks to remove the mount at that path.
func (m *Mount) IsMarkedForRemoval() (string, bool) {
	return IsMarkedForRemoval(m.GetDestination())
}

// IsMarkedForRemoval returns the name of the environment variable e without
// its removal marker and whether e asks to remove that variable.
func (e *KeyValue) IsMarkedForRemoval() (string, bool) { return IsMarkedForRemoval(e.GetKey()) }

// IsMarkedForRemoval returns the path of d without its removal marker and
// whether d asks to remove the device at that path.
func (d *LinuxDevice) IsMarkedForRemoval() (string, bool) { return IsMarkedForRemoval(d.GetPath()) }

// IsMarkedForRemoval returns the type of n without its removal marker and
// whether n asks to remove the namespace of that type.
func (n *LinuxNamespace) IsMarkedForRemoval() (string, bool) {
	return IsMarkedForRemoval(n.GetType())
}

// ToOCI returns e as an OCI process environment entry, "key=value".
func (e *KeyValue) ToOCI() string { return e.GetKey() + "=" + e.GetValue() }

// FromOCIEnv splits OCI process environment entries into KeyValues at their
// first "="; an entry without one becomes a key with an empty value. A nil
// in gives nil.
func FromOCIEnv(in []string) []*KeyValue {
	if in == nil {
		return nil
	}
	out := make([]*KeyValue, 0, len(in))
	for _, kv := range in {
		key, value, _ := strings.Cut(kv, "=")
		out = append(out, &KeyValue{Key: key, Value: value})
	}
	return out
}

// Copy returns a deep copy of r (nil for nil).
func (r *LinuxResources) Copy() *LinuxResources { return r.CloneVT() }

// Copy returns a deep copy of r (nil for nil). Unlike upstream's, the copy
// keeps Remove.
func (r *LinuxRdt) Copy() *LinuxRdt { return r.CloneVT() }

// Append appends the hooks of h to those of hooks and returns hooks. A nil
// hooks is allocated if there is anything to append.
func (hooks *Hooks) Append(h *Hooks) *Hooks {
	if h == nil {
		return hooks
	}
	if hooks == nil {
		hooks = &Hooks{}
	}
	hooks.Prestart = append(hooks.Prestart, h.Prestart...)
	hooks.CreateRuntime = append(hooks.CreateRuntime, h.CreateRuntime...)
	hooks.CreateContainer = append(hooks.CreateContainer, h.CreateContainer...)
	hooks.StartContainer = append(hooks.StartContainer, h.StartContainer...)
	hooks.Poststart = append(hooks.Poststart, h.Poststart...)
	hooks.Poststop = append(hooks.Poststop, h.Poststop...)
	return hooks
}

// Hooks returns hooks if it holds any hook, and nil otherwise. Unlike
// Strip, it leaves hooks as it is.
func (hooks *Hooks) Hooks() *Hooks {
	for _, l := range [][]*Hook{
		hooks.GetPrestart(), hooks.GetCreateRuntime(), hooks.GetCreateContainer(),
		hooks.GetStartContainer(), hooks.GetPoststart(), hooks.GetPoststop(),
	} {
		if len(l) > 0 {
			return hooks
		}
	}
	return nil
}
