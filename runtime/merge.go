package runtime

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrinet/nrinet/api"
)

// adjustment merges the ContainerAdjustments of the plugins of one
// CreateContainer request and keeps the container view that later plugins
// see up to date.
type adjustment struct {
	container string
	owners    *owners
	merged    *api.ContainerAdjustment
	view      *api.Container // the container as the next plugin sees it
	cloned    bool
}

func newAdjustment(o *owners, ctr *api.Container) *adjustment {
	return &adjustment{container: ctr.GetId(), owners: o, merged: &api.ContainerAdjustment{}, view: ctr}
}

func (a *adjustment) key(f api.Field, entry string) ownerKey {
	return ownerKey{container: a.container, field: f, entry: entry}
}

// mutableView returns the container view, cloning the caller's container
// before the first change.
func (a *adjustment) mutableView() *api.Container {
	if !a.cloned {
		if a.view == nil {
			a.view = &api.Container{}
		} else {
			a.view = proto.CloneOf(a.view)
		}
		a.cloned = true
	}
	return a.view
}

// apply merges one plugin's adjustment. A conflict leaves the merge
// unusable; the request fails.
func (a *adjustment) apply(plugin string, adj *api.ContainerAdjustment) error {
	if adj == nil {
		return nil
	}
	for _, k := range sortedKeys(adj.GetAnnotations()) {
		if err := a.annotation(plugin, k, adj.GetAnnotations()[k]); err != nil {
			return err
		}
	}
	for _, m := range adj.GetMounts() {
		if err := a.mount(plugin, m); err != nil {
			return err
		}
	}
	for _, kv := range adj.GetEnv() {
		if err := a.env(plugin, kv); err != nil {
			return err
		}
	}
	if args := adj.GetArgs(); len(args) > 0 {
		force := args[0] == ""
		if force {
			args = args[1:]
		}
		k := a.key(api.Field_Args, "")
		if force {
			a.owners.m[k] = plugin
		} else if err := a.owners.claim(k, plugin); err != nil {
			return err
		}
		a.merged.Args = slices.Clone(args)
		a.mutableView().Args = slices.Clone(args)
	}
	if h := adj.GetHooks(); h != nil && proto.Size(h) > 0 {
		a.owners.hooks(a.container, plugin)
		if a.merged.Hooks == nil {
			a.merged.Hooks = &api.Hooks{}
		}
		proto.Merge(a.merged.Hooks, h)
	}
	for _, rl := range adj.GetRlimits() {
		if err := a.owners.claim(a.key(api.Field_Rlimits, rl.GetType()), plugin); err != nil {
			return err
		}
		a.merged.Rlimits = append(a.merged.Rlimits, rl)
	}
	for _, d := range adj.GetCDIDevices() {
		if err := a.owners.claim(a.key(api.Field_CdiDevices, d.GetName()), plugin); err != nil {
			return err
		}
		a.merged.CDIDevices = append(a.merged.CDIDevices, d)
	}
	if l := adj.GetLinux(); l != nil {
		if err := claimMessage(a.owners, a.container, plugin, "", l.ProtoReflect()); err != nil {
			return err
		}
		if a.merged.Linux == nil {
			a.merged.Linux = &api.LinuxContainerAdjustment{}
		}
		proto.Merge(a.merged.Linux, l)
		a.applyLinux(l)
	}
	return nil
}

// applyLinux shows later plugins the Linux settings an adjustment made:
// resources, cgroups path, namespaces (by type), devices (by path) and
// sysctls. Removal markers ("-x") remove the entry.
func (a *adjustment) applyLinux(l *api.LinuxContainerAdjustment) {
	view := a.mutableView()
	if view.Linux == nil {
		view.Linux = &api.LinuxContainer{}
	}
	vl := view.Linux
	if r := l.GetResources(); r != nil {
		if vl.Resources == nil {
			vl.Resources = &api.LinuxResources{}
		}
		proto.Merge(vl.Resources, r)
	}
	if cp := l.GetCgroupsPath(); cp != "" {
		vl.CgroupsPath = cp
	}
	for _, ns := range l.GetNamespaces() {
		typ, remove := strings.CutPrefix(ns.GetType(), "-")
		vl.Namespaces = slices.DeleteFunc(vl.Namespaces, func(x *api.LinuxNamespace) bool { return x.GetType() == typ })
		if !remove {
			vl.Namespaces = append(vl.Namespaces, ns)
		}
	}
	for _, d := range l.GetDevices() {
		path, remove := strings.CutPrefix(d.GetPath(), "-")
		vl.Devices = slices.DeleteFunc(vl.Devices, func(x *api.LinuxDevice) bool { return x.GetPath() == path })
		if !remove {
			vl.Devices = append(vl.Devices, d)
		}
	}
	for _, k := range sortedKeys(l.GetSysctl()) {
		name, remove := strings.CutPrefix(k, "-")
		if remove {
			delete(vl.Sysctl, name)
			continue
		}
		if vl.Sysctl == nil {
			vl.Sysctl = map[string]string{}
		}
		vl.Sysctl[name] = l.GetSysctl()[k]
	}
}

// annotation merges one annotation; a key "-k" removes k.
func (a *adjustment) annotation(plugin, k, v string) error {
	name, remove := strings.CutPrefix(k, "-")
	if err := a.owners.claim(a.key(api.Field_Annotations, name), plugin); err != nil {
		return err
	}
	if a.merged.Annotations == nil {
		a.merged.Annotations = map[string]string{}
	}
	view := a.mutableView()
	if remove {
		delete(a.merged.Annotations, name)
		a.merged.Annotations["-"+name] = ""
		delete(view.Annotations, name)
		return nil
	}
	delete(a.merged.Annotations, "-"+name)
	a.merged.Annotations[name] = v
	if view.Annotations == nil {
		view.Annotations = map[string]string{}
	}
	view.Annotations[name] = v
	return nil
}

// mount merges one mount; a destination "-/path" removes the mount there.
func (a *adjustment) mount(plugin string, m *api.Mount) error {
	dst, remove := strings.CutPrefix(m.GetDestination(), "-")
	if err := a.owners.claim(a.key(api.Field_Mounts, dst), plugin); err != nil {
		return err
	}
	sameDst := func(x *api.Mount) bool { return strings.TrimPrefix(x.GetDestination(), "-") == dst }
	a.merged.Mounts = append(slices.DeleteFunc(a.merged.Mounts, sameDst), m)
	view := a.mutableView()
	view.Mounts = slices.DeleteFunc(view.Mounts, sameDst)
	if !remove {
		view.Mounts = append(view.Mounts, m)
	}
	return nil
}

// env merges one environment variable; a key "-NAME" removes NAME.
func (a *adjustment) env(plugin string, kv *api.KeyValue) error {
	name, remove := strings.CutPrefix(kv.GetKey(), "-")
	if err := a.owners.claim(a.key(api.Field_Env, name), plugin); err != nil {
		return err
	}
	a.merged.Env = append(slices.DeleteFunc(a.merged.Env, func(x *api.KeyValue) bool {
		return strings.TrimPrefix(x.GetKey(), "-") == name
	}), kv)
	view := a.mutableView()
	view.Env = slices.DeleteFunc(view.Env, func(e string) bool {
		k, _, _ := strings.Cut(e, "=")
		return k == name
	})
	if !remove {
		view.Env = append(view.Env, name+"="+kv.GetValue())
	}
	return nil
}

// untracked are fields that plugins append to without ownership, as
// upstream does: device cgroup rules.
var untracked = map[string]bool{"resources.devices": true}

// claimMessage claims every field set in m for plugin: known leaves by
// their Field number (map keys and list entries of compound fields one by
// one), other leaves by their protobuf path.
func claimMessage(o *owners, container, plugin, prefix string, m protoreflect.Message) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		path := prefix + string(fd.Name())
		if untracked[path] {
			return true
		}
		if f, ok := linuxFields[path]; ok {
			err = o.claim(ownerKey{container: container, field: f}, plugin)
			return err == nil
		}
		if f, ok := linuxFields[path+"[]"]; ok {
			for _, entry := range entries(fd, v) {
				if err = o.claim(ownerKey{container: container, field: f, entry: strings.TrimPrefix(entry, "-")}, plugin); err != nil {
					return false
				}
			}
			return true
		}
		if fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() {
			err = claimMessage(o, container, plugin, path+".", v.Message())
			return err == nil
		}
		err = o.claim(ownerKey{container: container, path: path}, plugin)
		return err == nil
	})
	return err
}

// entries returns the keys of a map field, or for a list of messages the
// first string field of each entry (a device's path, a namespace's type, a
// hugepage limit's page size).
func entries(fd protoreflect.FieldDescriptor, v protoreflect.Value) []string {
	var out []string
	switch {
	case fd.IsMap():
		v.Map().Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			out = append(out, k.String())
			return true
		})
		slices.Sort(out)
	case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
		l := v.List()
		for i := range l.Len() {
			e := l.Get(i).Message()
			fields := e.Descriptor().Fields()
			for j := range fields.Len() {
				if f := fields.Get(j); f.Kind() == protoreflect.StringKind && !f.IsList() {
					out = append(out, e.Get(f).String())
					break
				}
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// updates merges ContainerUpdates of several plugins, one entry per
// container.
type updates struct {
	owners *owners
	byID   map[string]*api.ContainerUpdate
	order  []string
}

func newUpdates(o *owners) *updates {
	return &updates{owners: o, byID: map[string]*api.ContainerUpdate{}}
}

// apply merges one plugin's updates. An update whose claims conflict is
// skipped if it has IgnoreFailure, otherwise it fails the request. Each
// update is claimed on a scratch record first, so a skipped update leaves
// no claims behind.
func (u *updates) apply(plugin string, list []*api.ContainerUpdate) error {
	for _, up := range list {
		id := up.GetContainerId()
		scratch := &owners{m: map[ownerKey]string{}}
		var err error
		if l := up.GetLinux(); l != nil {
			err = claimMessage(scratch, id, plugin, "", l.ProtoReflect())
		}
		if err == nil {
			// Check every claim before recording any, so that an update
			// skipped for a conflict leaves no claims behind.
			for k := range scratch.m {
				if prev, ok := u.owners.m[k]; ok && prev != plugin {
					err = &ConflictError{Field: k.String(), Plugin: plugin, Owner: prev}
					break
				}
			}
		}
		if err == nil {
			for k := range scratch.m {
				u.owners.m[k] = plugin
			}
		}
		if err != nil {
			if up.GetIgnoreFailure() {
				continue
			}
			return err
		}
		cur, ok := u.byID[id]
		if !ok {
			cur = &api.ContainerUpdate{ContainerId: id, IgnoreFailure: true}
			u.byID[id] = cur
			u.order = append(u.order, id)
		}
		cur.IgnoreFailure = cur.IgnoreFailure && up.GetIgnoreFailure()
		if up.GetLinux() != nil {
			if cur.Linux == nil {
				cur.Linux = &api.LinuxContainerUpdate{}
			}
			proto.Merge(cur.Linux, up.GetLinux())
		}
	}
	return nil
}

// list returns the merged updates in the order containers first appeared,
// without the container skip.
func (u *updates) list(skip string) []*api.ContainerUpdate {
	var out []*api.ContainerUpdate
	for _, id := range u.order {
		if id != skip {
			out = append(out, u.byID[id])
		}
	}
	return out
}
