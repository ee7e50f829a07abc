package api

// Helpers a plugin uses to build a ContainerUpdate for a running
// container. They carry the names and signatures of the helpers in
// containerd/nri's pkg/api and mirror the resource helpers of
// ContainerAdjustment; sub-messages are created on first use.

// SetContainerId sets the ID of the container to update.
func (u *ContainerUpdate) SetContainerId(id string) { //nolint:revive // upstream name
	u.ContainerId = id
}

// SetIgnoreFailure marks the update as optional: its failure does not fail the request it came with.
func (u *ContainerUpdate) SetIgnoreFailure() {
	u.IgnoreFailure = true
}

// SetLinuxMemoryLimit records setting the memory limit in bytes.
func (u *ContainerUpdate) SetLinuxMemoryLimit(value int64) {
	memoryOf(u.resources()).Limit = &OptionalInt64{Value: value}
}

// SetLinuxMemoryReservation records setting the memory reservation (soft limit) in bytes.
func (u *ContainerUpdate) SetLinuxMemoryReservation(value int64) {
	memoryOf(u.resources()).Reservation = &OptionalInt64{Value: value}
}

// SetLinuxMemorySwap records setting the memory plus swap limit in bytes.
func (u *ContainerUpdate) SetLinuxMemorySwap(value int64) {
	memoryOf(u.resources()).Swap = &OptionalInt64{Value: value}
}

// SetLinuxMemoryKernel records setting the kernel memory limit in bytes.
func (u *ContainerUpdate) SetLinuxMemoryKernel(value int64) {
	memoryOf(u.resources()).Kernel = &OptionalInt64{Value: value}
}

// SetLinuxMemoryKernelTCP records setting the kernel TCP buffer memory limit in bytes.
func (u *ContainerUpdate) SetLinuxMemoryKernelTCP(value int64) {
	memoryOf(u.resources()).KernelTcp = &OptionalInt64{Value: value}
}

// SetLinuxMemorySwappiness records setting the memory swappiness.
func (u *ContainerUpdate) SetLinuxMemorySwappiness(value uint64) {
	memoryOf(u.resources()).Swappiness = &OptionalUInt64{Value: value}
}

// SetLinuxMemoryDisableOomKiller records disabling the OOM killer.
func (u *ContainerUpdate) SetLinuxMemoryDisableOomKiller() {
	memoryOf(u.resources()).DisableOomKiller = &OptionalBool{Value: true}
}

// SetLinuxMemoryUseHierarchy records enabling hierarchical memory accounting.
func (u *ContainerUpdate) SetLinuxMemoryUseHierarchy() {
	memoryOf(u.resources()).UseHierarchy = &OptionalBool{Value: true}
}

// SetLinuxCPUShares records setting the CPU shares (relative weight).
func (u *ContainerUpdate) SetLinuxCPUShares(value uint64) {
	cpuOf(u.resources()).Shares = &OptionalUInt64{Value: value}
}

// SetLinuxCPUQuota records setting the CFS quota in microseconds per period.
func (u *ContainerUpdate) SetLinuxCPUQuota(value int64) {
	cpuOf(u.resources()).Quota = &OptionalInt64{Value: value}
}

// SetLinuxCPUPeriod records setting the CFS period in microseconds (an unsigned field; int64 as upstream).
func (u *ContainerUpdate) SetLinuxCPUPeriod(value int64) {
	cpuOf(u.resources()).Period = &OptionalUInt64{Value: uint64(value)}
}

// SetLinuxCPURealtimeRuntime records setting the realtime runtime in microseconds.
func (u *ContainerUpdate) SetLinuxCPURealtimeRuntime(value int64) {
	cpuOf(u.resources()).RealtimeRuntime = &OptionalInt64{Value: value}
}

// SetLinuxCPURealtimePeriod records setting the realtime period in microseconds.
func (u *ContainerUpdate) SetLinuxCPURealtimePeriod(value uint64) {
	cpuOf(u.resources()).RealtimePeriod = &OptionalUInt64{Value: value}
}

// SetLinuxCPUSetCPUs records setting the cpuset CPU list (e.g. "0-3,8").
func (u *ContainerUpdate) SetLinuxCPUSetCPUs(value string) {
	cpuOf(u.resources()).Cpus = value
}

// SetLinuxCPUSetMems records setting the cpuset memory node list (e.g. "0,1").
func (u *ContainerUpdate) SetLinuxCPUSetMems(value string) {
	cpuOf(u.resources()).Mems = value
}

// SetLinuxPidLimits records setting the maximum number of processes (upstream runtimes drop it from updates).
func (u *ContainerUpdate) SetLinuxPidLimits(value int64) {
	pidsOf(u.resources()).Limit = value
}

// AddLinuxHugepageLimit records setting the limit in bytes for huge pages of pageSize (e.g. "2MB").
func (u *ContainerUpdate) AddLinuxHugepageLimit(pageSize string, value uint64) {
	addHugepageLimit(u.resources(), pageSize, value)
}

// AddLinuxDeviceCgroup records appending a device cgroup rule; nil is ignored (not in upstream NRI, whose runtimes drop it from updates).
func (u *ContainerUpdate) AddLinuxDeviceCgroup(rule *LinuxDeviceCgroup) {
	if rule != nil {
		r := u.resources()
		r.Devices = append(r.Devices, rule)
	}
}

// AddLinuxUnified records setting the cgroup v2 unified resource key to value.
func (u *ContainerUpdate) AddLinuxUnified(key, value string) {
	unifiedOf(u.resources())[key] = value
}

// SetLinuxBlockIOClass records setting the block I/O class.
func (u *ContainerUpdate) SetLinuxBlockIOClass(value string) {
	u.resources().BlockioClass = &OptionalString{Value: value}
}

// SetLinuxRDTClass records setting the RDT class.
func (u *ContainerUpdate) SetLinuxRDTClass(value string) {
	u.resources().RdtClass = &OptionalString{Value: value}
}

// resources returns the update's resources, creating them when missing.
func (u *ContainerUpdate) resources() *LinuxResources {
	if u.Linux == nil {
		u.Linux = &LinuxContainerUpdate{}
	}
	return ensureResources(&u.Linux.Resources)
}
