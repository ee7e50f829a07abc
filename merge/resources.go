package merge

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrinet/nrinet/api"
)

// This file merges Linux resources, for adjustments of a container being
// created and for updates of running containers alike.

// resourceField returns the Field that owns a leaf of LinuxMemory or
// LinuxCPU, or Field_None.
func resourceField(parent, name protoreflect.Name) api.Field {
	switch parent {
	case "LinuxMemory":
		switch name {
		case "limit":
			return api.Field_MemLimit
		case "reservation":
			return api.Field_MemReservation
		case "swap":
			return api.Field_MemSwapLimit
		case "kernel":
			return api.Field_MemKernelLimit
		case "kernel_tcp":
			return api.Field_MemTCPLimit
		case "swappiness":
			return api.Field_MemSwappiness
		case "disable_oom_killer":
			return api.Field_MemDisableOomKiller
		case "use_hierarchy":
			return api.Field_MemUseHierarchy
		}
	case "LinuxCPU":
		switch name {
		case "shares":
			return api.Field_CPUShares
		case "quota":
			return api.Field_CPUQuota
		case "period":
			return api.Field_CPUPeriod
		case "realtime_runtime":
			return api.Field_CPURealtimeRuntime
		case "realtime_period":
			return api.Field_CPURealtimePeriod
		case "cpus":
			return api.Field_CPUSetCPUs
		case "mems":
			return api.Field_CPUSetMems
		}
	}
	return api.Field_None
}

// mergeLeaves claims every field set in src (a LinuxMemory or LinuxCPU)
// and copies it into each of dsts (messages of the same type).
func mergeLeaves(o *Owners, container, plugin string, src protoreflect.Message, dsts ...protoreflect.Message) error {
	var err error
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		f := resourceField(src.Descriptor().Name(), fd.Name())
		if f == api.Field_None {
			err = fmt.Errorf("plugin %q set %s.%s, which nrinet cannot merge", plugin, src.Descriptor().Name(), fd.Name())
			return false
		}
		if err = o.claim(plugin, key{container, f, ""}); err != nil {
			return false
		}
		for _, d := range dsts {
			d.Set(fd, v)
		}
		return true
	})
	return err
}

// mergeResources merges resources src set by plugin into each of dsts: the
// merged result and the view of the container, or the copy an update
// works on.
func mergeResources(o *Owners, container, plugin string, src *api.LinuxResources, dsts ...*api.LinuxResources) error {
	if src == nil {
		return nil
	}
	if m := src.GetMemory(); m != nil {
		targets := make([]protoreflect.Message, len(dsts))
		for i, d := range dsts {
			if d.Memory == nil {
				d.Memory = &api.LinuxMemory{}
			}
			targets[i] = d.Memory.ProtoReflect()
		}
		if err := mergeLeaves(o, container, plugin, m.ProtoReflect(), targets...); err != nil {
			return err
		}
	}
	if c := src.GetCpu(); c != nil {
		targets := make([]protoreflect.Message, len(dsts))
		for i, d := range dsts {
			if d.Cpu == nil {
				d.Cpu = &api.LinuxCPU{}
			}
			targets[i] = d.Cpu.ProtoReflect()
		}
		if err := mergeLeaves(o, container, plugin, c.ProtoReflect(), targets...); err != nil {
			return err
		}
	}
	for _, l := range src.GetHugepageLimits() {
		if err := o.claim(plugin, key{container, api.Field_HugepageLimits, l.GetPageSize()}); err != nil {
			return err
		}
		for _, d := range dsts {
			d.HugepageLimits = append(slices.DeleteFunc(d.HugepageLimits, func(x *api.HugepageLimit) bool {
				return x.GetPageSize() == l.GetPageSize()
			}), l)
		}
	}
	// Device cgroup rules are appended without ownership, as upstream does.
	for _, d := range dsts {
		d.Devices = append(d.Devices, src.GetDevices()...)
	}
	for _, k := range sortedKeys(src.GetUnified()) {
		if err := o.claim(plugin, key{container, api.Field_CgroupsUnified, k}); err != nil {
			return err
		}
		for _, d := range dsts {
			if d.Unified == nil {
				d.Unified = map[string]string{}
			}
			d.Unified[k] = src.GetUnified()[k]
		}
	}
	if v := src.GetBlockioClass(); v != nil {
		if err := o.claim(plugin, key{container, api.Field_BlockioClass, ""}); err != nil {
			return err
		}
		for _, d := range dsts {
			d.BlockioClass = v
		}
	}
	if v := src.GetRdtClass(); v != nil {
		if err := o.claim(plugin, key{container, api.Field_RdtClass, ""}); err != nil {
			return err
		}
		for _, d := range dsts {
			d.RdtClass = v
		}
	}
	if v := src.GetPids(); v != nil {
		if err := o.claim(plugin, key{container, api.Field_PidsLimit, ""}); err != nil {
			return err
		}
		for _, d := range dsts {
			d.Pids = &api.LinuxPids{Limit: v.GetLimit()}
		}
	}
	return nil
}

// resources merges the resources of an adjustment into the result and
// the view.
func (a *Adjustment) resources(plugin string, l *api.LinuxContainerAdjustment) error {
	r := l.GetResources()
	if r == nil {
		return nil
	}
	out := a.outLinux()
	if out.Resources == nil {
		out.Resources = &api.LinuxResources{}
	}
	vl := a.mutableLinux()
	if vl.Resources == nil {
		vl.Resources = &api.LinuxResources{}
	}
	return mergeResources(a.owners, a.id, plugin, r, out.Resources, vl.Resources)
}
