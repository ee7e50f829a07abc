package merge

import (
	"slices"

	"github.com/nrinet/nrinet/api"
)

// This file merges the container-level (not Linux-specific) adjustments:
// annotations, mounts, environment, arguments, OCI hooks, rlimits and CDI
// devices.

func (a *Adjustment) annotations(plugin string, adj *api.ContainerAdjustment) error {
	if len(adj.GetAnnotations()) == 0 {
		return nil
	}
	v := a.mutable()
	return mergeMap(a.owners, a.id, api.Field_Annotations, plugin, adj.GetAnnotations(), &a.out.Annotations, &v.Annotations, "")
}

func (a *Adjustment) mounts(plugin string, adj *api.ContainerAdjustment) error {
	in := adj.GetMounts()
	if len(in) == 0 {
		return nil
	}
	out, touched, err := mergeList(a.owners, a.id, api.Field_Mounts, plugin, in, a.out.Mounts, mountKey)
	if err != nil {
		return err
	}
	a.out.Mounts = out
	v := a.mutable()
	v.Mounts = applyList(v.Mounts, in, touched, mountKey)
	return nil
}

func (a *Adjustment) env(plugin string, adj *api.ContainerAdjustment) error {
	in := adj.GetEnv()
	if len(in) == 0 {
		return nil
	}
	out, touched, err := mergeList(a.owners, a.id, api.Field_Env, plugin, in, a.out.Env, envKey)
	if err != nil {
		return err
	}
	a.out.Env = out
	vars := make([]string, len(in))
	for i, kv := range in {
		vars[i] = kv.GetKey() + "=" + kv.GetValue()
	}
	v := a.mutable()
	v.Env = applyList(v.Env, vars, touched, envVarKey)
	return nil
}

// args: a first element "" replaces the arguments even if another plugin
// set them; otherwise setting them claims them.
func (a *Adjustment) args(plugin string, adj *api.ContainerAdjustment) error {
	args := adj.GetArgs()
	if len(args) == 0 {
		return nil
	}
	k := key{a.id, api.Field_Args, ""}
	if args[0] == "" {
		a.owners.clear(plugin, k)
		args = args[1:]
	}
	if err := a.owners.claim(plugin, k); err != nil {
		return err
	}
	a.out.Args = slices.Clone(args)
	a.mutable().Args = slices.Clone(args)
	return nil
}

// hooks are appended, never conflict, and are owned by every plugin that
// added some.
func (a *Adjustment) hooks(plugin string, adj *api.ContainerAdjustment) error {
	h := adj.GetHooks()
	if h == nil {
		return nil
	}
	lists := func(h *api.Hooks) []*[]*api.Hook {
		return []*[]*api.Hook{&h.Prestart, &h.CreateRuntime, &h.CreateContainer, &h.StartContainer, &h.Poststart, &h.Poststop}
	}
	in := lists(h)
	added := false
	for _, l := range in {
		added = added || len(*l) > 0
	}
	if !added {
		return nil
	}
	if a.out.Hooks == nil {
		a.out.Hooks = &api.Hooks{}
	}
	v := a.mutable()
	if v.Hooks == nil {
		v.Hooks = &api.Hooks{}
	}
	out, view := lists(a.out.Hooks), lists(v.Hooks)
	for i, l := range in {
		*out[i] = append(*out[i], *l...)
		*view[i] = append(*view[i], *l...)
	}
	a.owners.accumulate(plugin, key{a.id, api.Field_OciHooks, ""})
	return nil
}

// rlimits are claimed per type and appended; the view keeps one limit per
// type.
func (a *Adjustment) rlimits(plugin string, adj *api.ContainerAdjustment) error {
	for _, rl := range adj.GetRlimits() {
		if err := a.owners.claim(plugin, key{a.id, api.Field_Rlimits, rl.GetType()}); err != nil {
			return err
		}
		sameType := func(x *api.POSIXRlimit) bool { return x.GetType() == rl.GetType() }
		a.out.Rlimits = append(slices.DeleteFunc(a.out.Rlimits, sameType), rl)
		v := a.mutable()
		v.Rlimits = append(slices.DeleteFunc(v.Rlimits, sameType), rl)
	}
	return nil
}

// cdiDevices are claimed per name and appended. They cannot be removed
// and are not shown to later plugins: the runtime resolves them.
func (a *Adjustment) cdiDevices(plugin string, adj *api.ContainerAdjustment) error {
	for _, d := range adj.GetCDIDevices() {
		if err := a.owners.claim(plugin, key{a.id, api.Field_CdiDevices, d.GetName()}); err != nil {
			return err
		}
		a.out.CDIDevices = append(slices.DeleteFunc(a.out.CDIDevices, func(x *api.CDIDevice) bool { return x.GetName() == d.GetName() }), d)
	}
	return nil
}
