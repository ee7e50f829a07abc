package api

// This file holds the read side of the ownership record a validator
// receives in ValidateContainerAdjustmentRequest.Owners: which plugin set
// which field of which container.
//
// An OwningPlugins maps container IDs to FieldOwners. A FieldOwners keeps
// simple fields (set as a whole, such as the memory limit) in Simple, keyed
// by Field number, and compound fields (set per entry, such as one
// annotation or one mount) in Compound, keyed by Field number and then by
// entry. An owner string is, as in containerd/nri:
//
//   - "plugin": the plugin that set the field or entry;
//   - "-plugin" (see IsMarkedForRemoval): the plugin that removed it;
//   - "a,b,...": for OCI hooks only (see HooksOwner), every plugin that
//     added hooks, in invocation order, since hooks accumulate rather than
//     conflict.
//
// Plugins are named as the runtime names them, normally "NN-name".
//
// Only lookups live here. Upstream's Claim* and Clear* mutators, its
// conflict checks and the NewOwningPlugins/NewFieldOwners constructors are
// deliberately absent: the merge package records ownership while it
// merges adjustments and builds this message from its own record.
//
// Every lookup is nil-safe: a nil *OwningPlugins or *FieldOwners, an
// unknown container and an unowned field all answer ("", false).
//
// The generic lookups (SimpleOwner, CompoundOwner, CompoundOwners) work for
// any Field; the named ones below them exist so that validators written
// against containerd/nri's pkg/api compile unchanged.

// Key returns f as the key of FieldOwners.Simple and FieldOwners.Compound.
func (f Field) Key() int32 { return int32(f) }

// SimpleOwner returns the owner of simple field field.
func (f *FieldOwners) SimpleOwner(field Field) (string, bool) {
	owner, ok := f.GetSimple()[field.Key()]
	return owner, ok
}

// CompoundOwner returns the owner of entry key of compound field field.
func (f *FieldOwners) CompoundOwner(field Field, key string) (string, bool) {
	owner, ok := f.GetCompound()[field.Key()].GetOwners()[ownedAs(field, key)]
	return owner, ok
}

// ownedAs is the form an entry is owned under: mount destinations and
// device paths cleaned ([EntryPath]), namespace types canonical
// ([NamespaceType]), so "/data/" finds the owner of "/data" and "net"
// that of "network".
func ownedAs(field Field, key string) string {
	switch field {
	case Field_Mounts, Field_Devices:
		return EntryPath(key)
	case Field_Namespace:
		return NamespaceType(key)
	}
	return key
}

// CompoundOwners returns the owners of all entries of compound field field,
// keyed by entry. The map belongs to f. It reports false if no entry of
// field is owned.
func (f *FieldOwners) CompoundOwners(field Field) (map[string]string, bool) {
	c, ok := f.GetCompound()[field.Key()]
	return c.GetOwners(), ok
}

// SimpleOwner returns the owner of simple field field of container id.
func (o *OwningPlugins) SimpleOwner(id string, field Field) (string, bool) {
	return o.GetOwners()[id].SimpleOwner(field)
}

// CompoundOwner returns the owner of entry key of compound field field of
// container id.
func (o *OwningPlugins) CompoundOwner(id string, field Field, key string) (string, bool) {
	return o.GetOwners()[id].CompoundOwner(field, key)
}

// CompoundOwners returns the owners of all entries of compound field field
// of container id, keyed by entry; see FieldOwners.CompoundOwners.
func (o *OwningPlugins) CompoundOwners(id string, field Field) (map[string]string, bool) {
	return o.GetOwners()[id].CompoundOwners(field)
}

// HooksOwner returns the plugins that added OCI hooks to container id, as a
// comma-separated list in invocation order.
func (o *OwningPlugins) HooksOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_OciHooks)
}

// HooksOwner returns the plugins that added OCI hooks, as a comma-separated
// list in invocation order.
func (f *FieldOwners) HooksOwner() (string, bool) { return f.SimpleOwner(Field_OciHooks) }

// NamespaceOwners returns the owners of the Linux namespaces of container
// id, keyed by namespace type.
func (o *OwningPlugins) NamespaceOwners(id string) (map[string]string, bool) {
	return o.CompoundOwners(id, Field_Namespace)
}

// NamespaceOwners returns the owners of the Linux namespaces, keyed by
// namespace type.
func (f *FieldOwners) NamespaceOwners() (map[string]string, bool) {
	return f.CompoundOwners(Field_Namespace)
}

// Named lookups, one per field upstream generates them for. Compound
// fields: <Name>Owner(id, entry) and <Name>Owner(entry). Simple fields:
// <Name>Owner(id) and <Name>Owner().

func (o *OwningPlugins) AnnotationOwner(id, key string) (string, bool) {
	return o.CompoundOwner(id, Field_Annotations, key)
}
func (o *OwningPlugins) MountOwner(id, destination string) (string, bool) {
	return o.CompoundOwner(id, Field_Mounts, destination)
}
func (o *OwningPlugins) DeviceOwner(id, path string) (string, bool) {
	return o.CompoundOwner(id, Field_Devices, path)
}
func (o *OwningPlugins) CdiDeviceOwner(id, name string) (string, bool) {
	return o.CompoundOwner(id, Field_CdiDevices, name)
}
func (o *OwningPlugins) EnvOwner(id, name string) (string, bool) {
	return o.CompoundOwner(id, Field_Env, name)
}
func (o *OwningPlugins) HugepageLimitOwner(id, size string) (string, bool) {
	return o.CompoundOwner(id, Field_HugepageLimits, size)
}
func (o *OwningPlugins) CgroupsUnifiedOwner(id, key string) (string, bool) {
	return o.CompoundOwner(id, Field_CgroupsUnified, key)
}
func (o *OwningPlugins) RlimitOwner(id, typ string) (string, bool) {
	return o.CompoundOwner(id, Field_Rlimits, typ)
}
func (o *OwningPlugins) NamespaceOwner(id, typ string) (string, bool) {
	return o.CompoundOwner(id, Field_Namespace, typ)
}
func (o *OwningPlugins) SysctlOwner(id, key string) (string, bool) {
	return o.CompoundOwner(id, Field_Sysctl, key)
}
func (o *OwningPlugins) LinuxNetDeviceOwner(id, path string) (string, bool) {
	return o.CompoundOwner(id, Field_LinuxNetDevices, path)
}
func (o *OwningPlugins) ArgsOwner(id string) (string, bool) { return o.SimpleOwner(id, Field_Args) }
func (o *OwningPlugins) MemLimitOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemLimit)
}
func (o *OwningPlugins) MemReservationOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemReservation)
}
func (o *OwningPlugins) MemSwapLimitOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemSwapLimit)
}
func (o *OwningPlugins) MemKernelLimitOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemKernelLimit)
}
func (o *OwningPlugins) MemTCPLimitOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemTCPLimit)
}
func (o *OwningPlugins) MemSwappinessOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemSwappiness)
}
func (o *OwningPlugins) MemDisableOomKillerOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemDisableOomKiller)
}
func (o *OwningPlugins) MemUseHierarchyOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemUseHierarchy)
}
func (o *OwningPlugins) CPUSharesOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPUShares)
}
func (o *OwningPlugins) CPUQuotaOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPUQuota)
}
func (o *OwningPlugins) CPUPeriodOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPUPeriod)
}
func (o *OwningPlugins) CPURealtimeRuntimeOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPURealtimeRuntime)
}
func (o *OwningPlugins) CPURealtimePeriodOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPURealtimePeriod)
}
func (o *OwningPlugins) CPUSetCPUsOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPUSetCPUs)
}
func (o *OwningPlugins) CPUSetMemsOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPUSetMems)
}
func (o *OwningPlugins) PidsLimitOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_PidsLimit)
}
func (o *OwningPlugins) BlockioClassOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_BlockioClass)
}
func (o *OwningPlugins) RdtClassOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_RdtClass)
}
func (o *OwningPlugins) CgroupsPathOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CgroupsPath)
}
func (o *OwningPlugins) OomScoreAdjOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_OomScoreAdj)
}
func (o *OwningPlugins) IOPriorityOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_IoPriority)
}
func (o *OwningPlugins) SeccompPolicyOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_SeccompPolicy)
}
func (o *OwningPlugins) LinuxSchedulerOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_LinuxSched)
}
func (o *OwningPlugins) RdtClosIDOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_RdtClosID)
}
func (o *OwningPlugins) RdtSchemataOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_RdtSchemata)
}
func (o *OwningPlugins) RdtEnableMonitoringOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_RdtEnableMonitoring)
}
func (o *OwningPlugins) MemoryPolicyOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemoryPolicy)
}

func (f *FieldOwners) AnnotationOwner(key string) (string, bool) {
	return f.CompoundOwner(Field_Annotations, key)
}
func (f *FieldOwners) MountOwner(destination string) (string, bool) {
	return f.CompoundOwner(Field_Mounts, destination)
}
func (f *FieldOwners) DeviceOwner(path string) (string, bool) {
	return f.CompoundOwner(Field_Devices, path)
}
func (f *FieldOwners) CdiDeviceOwner(name string) (string, bool) {
	return f.CompoundOwner(Field_CdiDevices, name)
}
func (f *FieldOwners) EnvOwner(name string) (string, bool) { return f.CompoundOwner(Field_Env, name) }
func (f *FieldOwners) HugepageLimitOwner(size string) (string, bool) {
	return f.CompoundOwner(Field_HugepageLimits, size)
}
func (f *FieldOwners) CgroupsUnifiedOwner(key string) (string, bool) {
	return f.CompoundOwner(Field_CgroupsUnified, key)
}
func (f *FieldOwners) RlimitOwner(typ string) (string, bool) {
	return f.CompoundOwner(Field_Rlimits, typ)
}
func (f *FieldOwners) NamespaceOwner(typ string) (string, bool) {
	return f.CompoundOwner(Field_Namespace, typ)
}
func (f *FieldOwners) SysctlOwner(key string) (string, bool) {
	return f.CompoundOwner(Field_Sysctl, key)
}
func (f *FieldOwners) LinuxNetDeviceOwner(path string) (string, bool) {
	return f.CompoundOwner(Field_LinuxNetDevices, path)
}
func (f *FieldOwners) ArgsOwner() (string, bool)     { return f.SimpleOwner(Field_Args) }
func (f *FieldOwners) MemLimitOwner() (string, bool) { return f.SimpleOwner(Field_MemLimit) }
func (f *FieldOwners) MemReservationOwner() (string, bool) {
	return f.SimpleOwner(Field_MemReservation)
}
func (f *FieldOwners) MemSwapLimitOwner() (string, bool) { return f.SimpleOwner(Field_MemSwapLimit) }
func (f *FieldOwners) MemKernelLimitOwner() (string, bool) {
	return f.SimpleOwner(Field_MemKernelLimit)
}
func (f *FieldOwners) MemTCPLimitOwner() (string, bool)   { return f.SimpleOwner(Field_MemTCPLimit) }
func (f *FieldOwners) MemSwappinessOwner() (string, bool) { return f.SimpleOwner(Field_MemSwappiness) }
func (f *FieldOwners) MemDisableOomKillerOwner() (string, bool) {
	return f.SimpleOwner(Field_MemDisableOomKiller)
}
func (f *FieldOwners) MemUseHierarchyOwner() (string, bool) {
	return f.SimpleOwner(Field_MemUseHierarchy)
}
func (f *FieldOwners) CPUSharesOwner() (string, bool) { return f.SimpleOwner(Field_CPUShares) }
func (f *FieldOwners) CPUQuotaOwner() (string, bool)  { return f.SimpleOwner(Field_CPUQuota) }
func (f *FieldOwners) CPUPeriodOwner() (string, bool) { return f.SimpleOwner(Field_CPUPeriod) }
func (f *FieldOwners) CPURealtimeRuntimeOwner() (string, bool) {
	return f.SimpleOwner(Field_CPURealtimeRuntime)
}
func (f *FieldOwners) CPURealtimePeriodOwner() (string, bool) {
	return f.SimpleOwner(Field_CPURealtimePeriod)
}
func (f *FieldOwners) CPUSetCPUsOwner() (string, bool)     { return f.SimpleOwner(Field_CPUSetCPUs) }
func (f *FieldOwners) CPUSetMemsOwner() (string, bool)     { return f.SimpleOwner(Field_CPUSetMems) }
func (f *FieldOwners) PidsLimitOwner() (string, bool)      { return f.SimpleOwner(Field_PidsLimit) }
func (f *FieldOwners) BlockioClassOwner() (string, bool)   { return f.SimpleOwner(Field_BlockioClass) }
func (f *FieldOwners) RdtClassOwner() (string, bool)       { return f.SimpleOwner(Field_RdtClass) }
func (f *FieldOwners) CgroupsPathOwner() (string, bool)    { return f.SimpleOwner(Field_CgroupsPath) }
func (f *FieldOwners) OomScoreAdjOwner() (string, bool)    { return f.SimpleOwner(Field_OomScoreAdj) }
func (f *FieldOwners) IOPriorityOwner() (string, bool)     { return f.SimpleOwner(Field_IoPriority) }
func (f *FieldOwners) SeccompPolicyOwner() (string, bool)  { return f.SimpleOwner(Field_SeccompPolicy) }
func (f *FieldOwners) LinuxSchedulerOwner() (string, bool) { return f.SimpleOwner(Field_LinuxSched) }
func (f *FieldOwners) RdtClosIDOwner() (string, bool)      { return f.SimpleOwner(Field_RdtClosID) }
func (f *FieldOwners) RdtSchemataOwner() (string, bool)    { return f.SimpleOwner(Field_RdtSchemata) }
func (f *FieldOwners) RdtEnableMonitoringOwner() (string, bool) {
	return f.SimpleOwner(Field_RdtEnableMonitoring)
}
func (f *FieldOwners) MemoryPolicyOwner() (string, bool) { return f.SimpleOwner(Field_MemoryPolicy) }
