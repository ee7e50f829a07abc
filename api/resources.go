package api

// The resource helpers of ContainerAdjustment and ContainerUpdate
// (SetLinuxMemoryLimit, ...) are one set, written for both types into
// resources_generated.go by internal/cmd/resourcegen (go generate ./api);
// they fill a LinuxResources through the functions of this file.

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
