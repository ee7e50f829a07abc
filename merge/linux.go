package merge

import (
	"slices"
	"strings"

	"github.com/nrinet/nrinet/api"
)

// This file merges the Linux settings of an adjustment other than
// resources: devices, cgroups path, OOM score, I/O priority, seccomp
// policy, namespaces, sysctls, net devices, scheduler, RDT and memory
// policy.

func (a *Adjustment) devices(plugin string, l *api.LinuxContainerAdjustment) error {
	in := l.GetDevices()
	if len(in) == 0 {
		return nil
	}
	out := a.outLinux()
	merged, touched, err := mergeList(a.owners, a.id, api.Field_Devices, plugin, in, out.Devices, deviceKey)
	if err != nil {
		return err
	}
	out.Devices = merged
	vl := a.mutableLinux()
	vl.Devices = applyList(vl.Devices, in, touched, deviceKey)
	return nil
}

// setSimple claims a simple field and, if set is not nil, shows the value
// to later plugins.
func (a *Adjustment) setSimple(plugin string, f api.Field, set func(out *api.LinuxContainerAdjustment, view *api.LinuxContainer)) error {
	if err := a.owners.claim(plugin, key{a.id, f, ""}); err != nil {
		return err
	}
	var view *api.LinuxContainer
	if f != api.Field_MemoryPolicy { // memory policy is not part of the container view
		view = a.mutableLinux()
	}
	set(a.outLinux(), view)
	return nil
}

func (a *Adjustment) cgroupsPath(plugin string, l *api.LinuxContainerAdjustment) error {
	p := l.GetCgroupsPath()
	if p == "" {
		return nil
	}
	return a.setSimple(plugin, api.Field_CgroupsPath, func(o *api.LinuxContainerAdjustment, v *api.LinuxContainer) {
		o.CgroupsPath, v.CgroupsPath = p, p
	})
}

func (a *Adjustment) oomScoreAdj(plugin string, l *api.LinuxContainerAdjustment) error {
	s := l.GetOomScoreAdj()
	if s == nil {
		return nil
	}
	return a.setSimple(plugin, api.Field_OomScoreAdj, func(o *api.LinuxContainerAdjustment, v *api.LinuxContainer) {
		o.OomScoreAdj, v.OomScoreAdj = s, s
	})
}

func (a *Adjustment) ioPriority(plugin string, l *api.LinuxContainerAdjustment) error {
	p := l.GetIoPriority()
	if p == nil {
		return nil
	}
	return a.setSimple(plugin, api.Field_IoPriority, func(o *api.LinuxContainerAdjustment, v *api.LinuxContainer) {
		o.IoPriority, v.IoPriority = p, p
	})
}

func (a *Adjustment) seccompPolicy(plugin string, l *api.LinuxContainerAdjustment) error {
	p := l.GetSeccompPolicy()
	if p == nil {
		return nil
	}
	return a.setSimple(plugin, api.Field_SeccompPolicy, func(o *api.LinuxContainerAdjustment, v *api.LinuxContainer) {
		o.SeccompPolicy, v.SeccompPolicy = p, p
	})
}

func (a *Adjustment) scheduler(plugin string, l *api.LinuxContainerAdjustment) error {
	s := l.GetScheduler()
	if s == nil {
		return nil
	}
	return a.setSimple(plugin, api.Field_LinuxSched, func(o *api.LinuxContainerAdjustment, v *api.LinuxContainer) {
		o.Scheduler, v.Scheduler = s, s
	})
}

func (a *Adjustment) memoryPolicy(plugin string, l *api.LinuxContainerAdjustment) error {
	p := l.GetMemoryPolicy()
	if p == nil {
		return nil
	}
	return a.setSimple(plugin, api.Field_MemoryPolicy, func(o *api.LinuxContainerAdjustment, _ *api.LinuxContainer) {
		o.MemoryPolicy = p
	})
}

// namespaces are claimed per type ("net" and "network" being one),
// removals ("-type") included; a plugin's last entry for a type counts.
// The view keeps the container's order, a replaced namespace in its
// place.
func (a *Adjustment) namespaces(plugin string, l *api.LinuxContainerAdjustment) error {
	if len(l.GetNamespaces()) == 0 {
		return nil
	}
	out, vl := a.outLinux(), a.mutableLinux()
	for _, ns := range l.GetNamespaces() {
		if ns == nil {
			continue
		}
		typ, remove := strings.CutPrefix(ns.GetType(), "-")
		typ = api.NamespaceType(typ)
		if err := a.owners.claim(plugin, key{a.id, api.Field_Namespace, typ}); err != nil {
			return err
		}
		sameType := func(x *api.LinuxNamespace) bool {
			return api.NamespaceType(strings.TrimPrefix(x.GetType(), "-")) == typ
		}
		// Entries of this type in the result are this plugin's (anyone
		// else's would have conflicted): its last one counts.
		out.Namespaces = append(slices.DeleteFunc(out.Namespaces, sameType), ns)
		i := slices.IndexFunc(vl.Namespaces, sameType)
		switch {
		case remove && i >= 0:
			vl.Namespaces = slices.Delete(vl.Namespaces, i, i+1)
		case !remove && i >= 0:
			vl.Namespaces[i] = ns
		case !remove:
			vl.Namespaces = append(vl.Namespaces, ns)
		}
	}
	return nil
}

func (a *Adjustment) sysctl(plugin string, l *api.LinuxContainerAdjustment) error {
	if len(l.GetSysctl()) == 0 {
		return nil
	}
	out, vl := a.outLinux(), a.mutableLinux()
	return mergeMap(a.owners, a.id, api.Field_Sysctl, plugin, l.GetSysctl(), &out.Sysctl, &vl.Sysctl, "")
}

func (a *Adjustment) netDevices(plugin string, l *api.LinuxContainerAdjustment) error {
	if len(l.GetNetDevices()) == 0 {
		return nil
	}
	out, vl := a.outLinux(), a.mutableLinux()
	return mergeMap(a.owners, a.id, api.Field_LinuxNetDevices, plugin, l.GetNetDevices(), &out.NetDevices, &vl.NetDevices, nil)
}

// rdt: remove clears the three RDT settings (and their owners, to the
// remover); each of CLOS ID, schemata and monitoring is claimed on its
// own. A remove not followed by a setting is forwarded.
func (a *Adjustment) rdt(plugin string, l *api.LinuxContainerAdjustment) error {
	r := l.GetRdt()
	if r == nil {
		return nil
	}
	out := a.outLinux()
	if out.Rdt == nil {
		out.Rdt = &api.LinuxRdt{}
	}
	if r.GetRemove() {
		for _, f := range []api.Field{api.Field_RdtClosID, api.Field_RdtSchemata, api.Field_RdtEnableMonitoring} {
			a.owners.clear(plugin, key{a.id, f, ""})
		}
		out.Rdt = &api.LinuxRdt{Remove: true}
	}
	if v := r.GetClosId(); v != nil {
		if err := a.owners.claim(plugin, key{a.id, api.Field_RdtClosID, ""}); err != nil {
			return err
		}
		out.Rdt.ClosId, out.Rdt.Remove = v, false
	}
	if v := r.GetSchemata(); v != nil {
		if err := a.owners.claim(plugin, key{a.id, api.Field_RdtSchemata, ""}); err != nil {
			return err
		}
		out.Rdt.Schemata, out.Rdt.Remove = v, false
	}
	if v := r.GetEnableMonitoring(); v != nil {
		if err := a.owners.claim(plugin, key{a.id, api.Field_RdtEnableMonitoring, ""}); err != nil {
			return err
		}
		out.Rdt.EnableMonitoring, out.Rdt.Remove = v, false
	}
	return nil
}
