package api

import (
	"maps"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// FromOCILinuxResources returns the Linux resources of an OCI spec as NRI
// resources, or nil for nil, as upstream does: memory, CPU, hugepage
// limits, device cgroup rules, pids and unified are converted, block I/O
// and RDT (NRI carries only their class names) are not; the annotations
// are not used. An unlimited pids limit (nil) becomes 0, a value present
// only when the spec has a pids section.
func FromOCILinuxResources(o *rspec.LinuxResources, _ map[string]string) *LinuxResources {
	if o == nil {
		return nil
	}
	r := &LinuxResources{}
	if m := o.Memory; m != nil {
		r.Memory = &LinuxMemory{
			Limit:            Int64(m.Limit),
			Reservation:      Int64(m.Reservation),
			Swap:             Int64(m.Swap),
			Kernel:           Int64(m.Kernel), //nolint:staticcheck // deprecated in the OCI spec, still carried by NRI
			KernelTcp:        Int64(m.KernelTCP),
			Swappiness:       UInt64(m.Swappiness),
			DisableOomKiller: Bool(m.DisableOOMKiller),
			UseHierarchy:     Bool(m.UseHierarchy),
		}
	}
	if c := o.CPU; c != nil {
		r.Cpu = &LinuxCPU{
			Shares:          UInt64(c.Shares),
			Quota:           Int64(c.Quota),
			Period:          UInt64(c.Period),
			RealtimeRuntime: Int64(c.RealtimeRuntime),
			RealtimePeriod:  UInt64(c.RealtimePeriod),
			Cpus:            c.Cpus,
			Mems:            c.Mems,
		}
	}
	for _, h := range o.HugepageLimits {
		r.HugepageLimits = append(r.HugepageLimits, &HugepageLimit{PageSize: h.Pagesize, Limit: h.Limit})
	}
	for _, d := range o.Devices {
		r.Devices = append(r.Devices, &LinuxDeviceCgroup{
			Allow:  d.Allow,
			Type:   d.Type,
			Major:  Int64(d.Major),
			Minor:  Int64(d.Minor),
			Access: d.Access,
		})
	}
	if p := o.Pids; p != nil {
		r.Pids = &LinuxPids{}
		if p.Limit != nil {
			r.Pids.Limit = *p.Limit
		}
	}
	if len(o.Unified) != 0 {
		r.Unified = maps.Clone(o.Unified)
	}
	return r
}
