package api

import "slices"

// This file and resources_generated.go hold the helpers a plugin uses to
// build a ContainerAdjustment. They carry the names and signatures of the
// helpers in containerd/nri's pkg/api, so a plugin ports by changing its
// import, and produce the wire encodings the runtime's merge rules expect:
//
//   - A removal is the key, path, name or type prefixed with '-': an
//     annotation or sysctl key "-k" with an empty value, a net device
//     "-hostIf" with a nil value, a Mount whose destination, a KeyValue
//     whose key, a LinuxDevice whose path or a LinuxNamespace whose type is
//     "-x" and has nothing else set. Removing an entry another plugin set
//     first lets a plugin touch that entry without a conflict.
//   - Messages passed to Add*/Set* helpers are stored as they are, not
//     copied: do not change them afterwards. Slices are copied.
//   - Sub-messages (linux, resources, memory, cpu, ...) are created on
//     first use; helpers never clear what other helpers set.

// markRemoved returns key with the removal marker '-' prepended.
func markRemoved(key string) string { return "-" + key }

// AddAnnotation records setting the annotation key to value.
func (a *ContainerAdjustment) AddAnnotation(key, value string) {
	a.annotations()[key] = value
}

// RemoveAnnotation records removing the annotation key (as "-key": "").
func (a *ContainerAdjustment) RemoveAnnotation(key string) {
	a.annotations()[markRemoved(key)] = ""
}

// AddMount records adding mount m, replacing any mount with the same destination; nil is ignored.
func (a *ContainerAdjustment) AddMount(m *Mount) {
	if m != nil {
		a.Mounts = append(a.Mounts, m)
	}
}

// RemoveMount records removing the mount at containerPath (as a Mount with destination "-containerPath").
func (a *ContainerAdjustment) RemoveMount(containerPath string) {
	a.Mounts = append(a.Mounts, &Mount{Destination: markRemoved(containerPath)})
}

// AddEnv records setting the environment variable key to value.
func (a *ContainerAdjustment) AddEnv(key, value string) {
	a.Env = append(a.Env, &KeyValue{Key: key, Value: value})
}

// RemoveEnv records removing the environment variable key (as a KeyValue with key "-key").
func (a *ContainerAdjustment) RemoveEnv(key string) {
	a.Env = append(a.Env, &KeyValue{Key: markRemoved(key)})
}

// SetArgs records replacing the container's command line with a copy of args; it conflicts with another plugin's.
func (a *ContainerAdjustment) SetArgs(args []string) {
	a.Args = slices.Clone(args)
}

// UpdateArgs records replacing the command line with args even if another plugin set it (as ["", args...]).
func (a *ContainerAdjustment) UpdateArgs(args []string) {
	a.Args = append([]string{""}, args...)
}

// AddHooks records appending the OCI hooks in h to the container's; nil is ignored.
func (a *ContainerAdjustment) AddHooks(h *Hooks) {
	if h == nil {
		return
	}
	if a.Hooks == nil {
		a.Hooks = &Hooks{}
	}
	a.Hooks.Prestart = append(a.Hooks.Prestart, h.Prestart...)
	a.Hooks.CreateRuntime = append(a.Hooks.CreateRuntime, h.CreateRuntime...)
	a.Hooks.CreateContainer = append(a.Hooks.CreateContainer, h.CreateContainer...)
	a.Hooks.StartContainer = append(a.Hooks.StartContainer, h.StartContainer...)
	a.Hooks.Poststart = append(a.Hooks.Poststart, h.Poststart...)
	a.Hooks.Poststop = append(a.Hooks.Poststop, h.Poststop...)
}

// AddRlimit records setting the POSIX resource limit typ (e.g. "RLIMIT_NOFILE") to hard and soft.
func (a *ContainerAdjustment) AddRlimit(typ string, hard, soft uint64) {
	a.Rlimits = append(a.Rlimits, &POSIXRlimit{Type: typ, Hard: hard, Soft: soft})
}

// AddCDIDevice records injecting the CDI device d; nil is ignored.
func (a *ContainerAdjustment) AddCDIDevice(d *CDIDevice) {
	if d != nil {
		a.CDIDevices = append(a.CDIDevices, d)
	}
}

// AddDevice records adding device d, replacing any device with the same path; nil is ignored.
func (a *ContainerAdjustment) AddDevice(d *LinuxDevice) {
	if d != nil {
		l := a.linux()
		l.Devices = append(l.Devices, d)
	}
}

// RemoveDevice records removing the device at path (as a LinuxDevice with path "-path").
func (a *ContainerAdjustment) RemoveDevice(path string) {
	l := a.linux()
	l.Devices = append(l.Devices, &LinuxDevice{Path: markRemoved(path)})
}

// AddOrReplaceNamespace records joining or creating namespace n, replacing any of its type; nil is ignored.
func (a *ContainerAdjustment) AddOrReplaceNamespace(n *LinuxNamespace) {
	if n != nil {
		l := a.linux()
		l.Namespaces = append(l.Namespaces, n)
	}
}

// RemoveNamespace records removing the namespace of n's type (as a LinuxNamespace with type "-type"); nil is ignored.
func (a *ContainerAdjustment) RemoveNamespace(n *LinuxNamespace) {
	if n != nil {
		l := a.linux()
		l.Namespaces = append(l.Namespaces, &LinuxNamespace{Type: markRemoved(n.Type)})
	}
}

// AddLinuxNetDevice records moving host network device hostDev into the container as d; nil d is ignored.
func (a *ContainerAdjustment) AddLinuxNetDevice(hostDev string, d *LinuxNetDevice) {
	if d != nil {
		a.netDevices()[hostDev] = d
	}
}

// RemoveLinuxNetDevice records removing host network device hostDev (as "-hostDev": nil).
func (a *ContainerAdjustment) RemoveLinuxNetDevice(hostDev string) {
	a.netDevices()[markRemoved(hostDev)] = nil
}

// SetLinuxSysctl records setting the sysctl key to value.
func (a *ContainerAdjustment) SetLinuxSysctl(key, value string) {
	a.sysctl()[key] = value
}

// RemoveLinuxSysctl records removing the sysctl key (as "-key": ""); upstream NRI has no such helper.
func (a *ContainerAdjustment) RemoveLinuxSysctl(key string) {
	a.sysctl()[markRemoved(key)] = ""
}

// SetLinuxCgroupsPath records setting the container's cgroups path.
func (a *ContainerAdjustment) SetLinuxCgroupsPath(value string) {
	a.linux().CgroupsPath = value
}

// SetLinuxOomScoreAdj records setting the OOM score adjustment to *value; nil clears a previous setting.
func (a *ContainerAdjustment) SetLinuxOomScoreAdj(value *int) {
	a.linux().OomScoreAdj = Int(value)
}

// SetLinuxIOPriority records setting the container's I/O priority.
func (a *ContainerAdjustment) SetLinuxIOPriority(ioprio *LinuxIOPriority) {
	a.linux().IoPriority = ioprio
}

// SetLinuxSeccompPolicy records replacing the container's seccomp policy.
func (a *ContainerAdjustment) SetLinuxSeccompPolicy(seccomp *LinuxSeccomp) {
	a.linux().SeccompPolicy = seccomp
}

// SetLinuxScheduler records setting the container's scheduling attributes.
func (a *ContainerAdjustment) SetLinuxScheduler(sch *LinuxScheduler) {
	a.linux().Scheduler = sch
}

// SetLinuxMemoryPolicy records setting the NUMA memory policy to mode over nodes with flags.
func (a *ContainerAdjustment) SetLinuxMemoryPolicy(mode MpolMode, nodes string, flags ...MpolFlag) {
	a.linux().MemoryPolicy = &LinuxMemoryPolicy{Mode: mode, Nodes: nodes, Flags: slices.Clone(flags)}
}

// SetLinuxRDTClosID records setting the RDT class of service (resctrl group) id.
func (a *ContainerAdjustment) SetLinuxRDTClosID(value string) {
	a.rdt().ClosId = String(value)
}

// SetLinuxRDTSchemata records setting the RDT schemata to a copy of value.
func (a *ContainerAdjustment) SetLinuxRDTSchemata(value []string) {
	a.rdt().Schemata = RepeatedString(value)
}

// SetLinuxRDTEnableMonitoring records enabling or disabling RDT monitoring.
func (a *ContainerAdjustment) SetLinuxRDTEnableMonitoring(value bool) {
	a.rdt().EnableMonitoring = Bool(value)
}

// RemoveLinuxRDT records removing the container's RDT configuration (as rdt.remove = true).
func (a *ContainerAdjustment) RemoveLinuxRDT() {
	a.rdt().Remove = true
}

// The accessors below create the part of the adjustment they return when
// it is missing.

func (a *ContainerAdjustment) annotations() map[string]string {
	if a.Annotations == nil {
		a.Annotations = map[string]string{}
	}
	return a.Annotations
}

func (a *ContainerAdjustment) linux() *LinuxContainerAdjustment {
	if a.Linux == nil {
		a.Linux = &LinuxContainerAdjustment{}
	}
	return a.Linux
}

func (a *ContainerAdjustment) netDevices() map[string]*LinuxNetDevice {
	l := a.linux()
	if l.NetDevices == nil {
		l.NetDevices = map[string]*LinuxNetDevice{}
	}
	return l.NetDevices
}

func (a *ContainerAdjustment) sysctl() map[string]string {
	l := a.linux()
	if l.Sysctl == nil {
		l.Sysctl = map[string]string{}
	}
	return l.Sysctl
}

func (a *ContainerAdjustment) rdt() *LinuxRdt {
	l := a.linux()
	if l.Rdt == nil {
		l.Rdt = &LinuxRdt{}
	}
	return l.Rdt
}

func (a *ContainerAdjustment) resources() *LinuxResources {
	return ensureResources(&a.linux().Resources)
}
