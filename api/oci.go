package api

import (
	"maps"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// The conversions to the OCI runtime-spec's types that the runtimes nrinet
// supports call on NRI's types. Applying adjustments to a Spec is package
// ocispec's; these only translate values. CRI-O v1.36.3 passes the
// resources of an NRI container update to its OCI runtime with
// LinuxResources.ToOCI.

// ToOCI returns r as OCI Linux resources, or nil for nil. As upstream's,
// the result always has CPU and Memory (empty when r has none); optional
// values r leaves unset stay nil; a Pids limit of UnlimitedPidsLimit or
// less gives Pids without a limit. The maps and slices are copies.
func (r *LinuxResources) ToOCI() *rspec.LinuxResources {
	if r == nil {
		return nil
	}
	out := &rspec.LinuxResources{
		CPU:     &rspec.LinuxCPU{},
		Memory:  &rspec.LinuxMemory{},
		Unified: maps.Clone(r.GetUnified()),
	}
	if len(out.Unified) == 0 {
		out.Unified = nil
	}
	if m := r.GetMemory(); m != nil {
		out.Memory = &rspec.LinuxMemory{
			Limit:            m.GetLimit().Get(),
			Reservation:      m.GetReservation().Get(),
			Swap:             m.GetSwap().Get(),
			Kernel:           m.GetKernel().Get(),
			KernelTCP:        m.GetKernelTcp().Get(),
			Swappiness:       m.GetSwappiness().Get(),
			DisableOOMKiller: m.GetDisableOomKiller().Get(),
			UseHierarchy:     m.GetUseHierarchy().Get(),
		}
	}
	if c := r.GetCpu(); c != nil {
		out.CPU = &rspec.LinuxCPU{
			Shares:          c.GetShares().Get(),
			Quota:           c.GetQuota().Get(),
			Period:          c.GetPeriod().Get(),
			RealtimeRuntime: c.GetRealtimeRuntime().Get(),
			RealtimePeriod:  c.GetRealtimePeriod().Get(),
			Cpus:            c.GetCpus(),
			Mems:            c.GetMems(),
		}
	}
	for _, h := range r.GetHugepageLimits() {
		out.HugepageLimits = append(out.HugepageLimits, rspec.LinuxHugepageLimit{Pagesize: h.GetPageSize(), Limit: h.GetLimit()})
	}
	for _, d := range r.GetDevices() {
		out.Devices = append(out.Devices, rspec.LinuxDeviceCgroup{
			Allow:  d.GetAllow(),
			Type:   d.GetType(),
			Major:  d.GetMajor().Get(),
			Minor:  d.GetMinor().Get(),
			Access: d.GetAccess(),
		})
	}
	if p := r.GetPids(); p != nil {
		out.Pids = &rspec.LinuxPids{}
		if limit := p.GetLimit(); limit > UnlimitedPidsLimit {
			out.Pids.Limit = &limit
		}
	}
	return out
}
