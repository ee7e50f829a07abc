package api

// Helpers that adjust the Linux resources of a container being created.
// ContainerUpdate has the same set in update.go; both fill a LinuxResources
// through the functions at the end of this file.

// SetLinuxMemoryLimit records setting the memory limit in bytes.
func (a *ContainerAdjustment) SetLinuxMemoryLimit(value int64) {
	memoryOf(a.resources()).Limit = &OptionalInt64{Value: value}
}

// SetLinuxMemoryReservation records setting the memory reservation (soft limit) in bytes.
func (a *ContainerAdjustment) SetLinuxMemoryReservation(value int64) {
	memoryOf(a.resources()).Reservation = &OptionalInt64{Value: value}
}

// SetLinuxMemorySwap records setting the memory plus swap limit in bytes.
func (a *ContainerAdjustment) SetLinuxMemorySwap(value int64) {
	memoryOf(a.resources()).Swap = &OptionalInt64{Value: value}
}

// SetLinuxMemoryKernel records setting the kernel memory limit in bytes.
func (a *ContainerAdjustment) SetLinuxMemoryKernel(value int64) {
	memoryOf(a.resources()).Kernel = &OptionalInt64{Value: value}
}

// SetLinuxMemoryKernelTCP records setting the kernel TCP buffer memory limit in bytes.
func (a *ContainerAdjustment) SetLinuxMemoryKernelTCP(value int64) {
	memoryOf(a.resources()).KernelTcp = &OptionalInt64{Value: value}
}

// SetLinuxMemorySwappiness records setting the memory swappiness.
func (a *ContainerAdjustment) SetLinuxMemorySwappiness(value uint64) {
	memoryOf(a.resources()).Swappiness = &OptionalUInt64{Value: value}
}

// SetLinuxMemoryDisableOomKiller records disabling the OOM killer.
func (a *ContainerAdjustment) SetLinuxMemoryDisableOomKiller() {
	memoryOf(a.resources()).DisableOomKiller = &OptionalBool{Value: true}
}

// SetLinuxMemoryUseHierarchy records enabling hierarchical memory accounting.
func (a *ContainerAdjustment) SetLinuxMemoryUseHierarchy() {
	memoryOf(a.resources()).UseHierarchy = &OptionalBool{Value: true}
}

// SetLinuxCPUShares records setting the CPU shares (relative weight).
func (a *ContainerAdjustment) SetLinuxCPUShares(value uint64) {
	cpuOf(a.resources()).Shares = &OptionalUInt64{Value: value}
}

// SetLinuxCPUQuota records setting the CFS quota in microseconds per period.
func (a *ContainerAdjustment) SetLinuxCPUQuota(value int64) {
	cpuOf(a.resources()).Quota = &OptionalInt64{Value: value}
}

// SetLinuxCPUPeriod records setting the CFS period in microseconds (an unsigned field; int64 as upstream).
func (a *ContainerAdjustment) SetLinuxCPUPeriod(value int64) {
	cpuOf(a.resources()).Period = &OptionalUInt64{Value: uint64(value)}
}

// SetLinuxCPURealtimeRuntime records setting the realtime runtime in microseconds.
func (a *ContainerAdjustment) SetLinuxCPURealtimeRuntime(value int64) {
	cpuOf(a.resources()).RealtimeRuntime = &OptionalInt64{Value: value}
}

// SetLinuxCPURealtimePeriod records setting the realtime period in microseconds.
func (a *ContainerAdjustment) SetLinuxCPURealtimePeriod(value uint64) {
	cpuOf(a.resources()).RealtimePeriod = &OptionalUInt64{Value: value}
}

// SetLinuxCPUSetCPUs records setting the cpuset CPU list (e.g. "0-3,8").
func (a *ContainerAdjustment) SetLinuxCPUSetCPUs(value string) {
	cpuOf(a.resources()).Cpus = value
}

// SetLinuxCPUSetMems records setting the cpuset memory node list (e.g. "0,1").
func (a *ContainerAdjustment) SetLinuxCPUSetMems(value string) {
	cpuOf(a.resources()).Mems = value
}

// SetLinuxPidLimits records setting the maximum number of processes.
func (a *ContainerAdjustment) SetLinuxPidLimits(value int64) {
	pidsOf(a.resources()).Limit = value
}

// AddLinuxHugepageLimit records setting the limit in bytes for huge pages of pageSize (e.g. "2MB").
func (a *ContainerAdjustment) AddLinuxHugepageLimit(pageSize string, value uint64) {
	addHugepageLimit(a.resources(), pageSize, value)
}

// AddLinuxDeviceCgroup records appending a device cgroup rule; nil is ignored (not in upstream NRI).
func (a *ContainerAdjustment) AddLinuxDeviceCgroup(rule *LinuxDeviceCgroup) {
	if rule != nil {
		r := a.resources()
		r.Devices = append(r.Devices, rule)
	}
}

// AddLinuxUnified records setting the cgroup v2 unified resource key to value.
func (a *ContainerAdjustment) AddLinuxUnified(key, value string) {
	unifiedOf(a.resources())[key] = value
}

// SetLinuxBlockIOClass records setting the block I/O class.
func (a *ContainerAdjustment) SetLinuxBlockIOClass(value string) {
	a.resources().BlockioClass = &OptionalString{Value: value}
}

// SetLinuxRDTClass records setting the RDT class in resources (see also SetLinuxRDTClosID).
func (a *ContainerAdjustment) SetLinuxRDTClass(value string) {
	a.resources().RdtClass = &OptionalString{Value: value}
}

// The functions below create the part of a LinuxResources they fill
// when it is missing.

// ensureResources returns *p, first setting it to an empty message if nil.
func ensureResources(p **LinuxResources) *LinuxResources {
	if *p == nil {
		*p = &LinuxResources{}
	}
	return *p
}

func memoryOf(r *LinuxResources) *LinuxMemory {
	if r.Memory == nil {
		r.Memory = &LinuxMemory{}
	}
	return r.Memory
}

func cpuOf(r *LinuxResources) *LinuxCPU {
	if r.Cpu == nil {
		r.Cpu = &LinuxCPU{}
	}
	return r.Cpu
}

func pidsOf(r *LinuxResources) *LinuxPids {
	if r.Pids == nil {
		r.Pids = &LinuxPids{}
	}
	return r.Pids
}

func unifiedOf(r *LinuxResources) map[string]string {
	if r.Unified == nil {
		r.Unified = map[string]string{}
	}
	return r.Unified
}

func addHugepageLimit(r *LinuxResources, pageSize string, limit uint64) {
	r.HugepageLimits = append(r.HugepageLimits, &HugepageLimit{PageSize: pageSize, Limit: limit})
}
