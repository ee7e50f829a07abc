package runtime

import (
	"fmt"
	"strings"

	"github.com/nrinet/nrinet/api"
)

// ownerKey identifies one claimable field of one container: a simple field
// (entry "") or one entry of a compound field (an annotation key, an env
// variable name, a mount destination, ...).
type ownerKey struct {
	container string
	field     api.Field
	path      string // protobuf path for fields without a Field number
	entry     string
}

func (k ownerKey) String() string {
	name := strings.TrimPrefix(k.field.String(), "Field_")
	if k.field == api.Field_None {
		name = k.path
	}
	if k.entry != "" {
		return fmt.Sprintf("%s %q of container %q", name, k.entry, k.container)
	}
	return fmt.Sprintf("%s of container %q", name, k.container)
}

// owners records which plugin set what during one request.
type owners struct {
	m map[ownerKey]string
}

func newOwners() *owners { return &owners{m: make(map[ownerKey]string)} }

// claim records plugin as the owner of k. A field another plugin already
// owns is a *ConflictError; a plugin may set its own field again.
func (o *owners) claim(k ownerKey, plugin string) error {
	if prev, ok := o.m[k]; ok && prev != plugin {
		return &ConflictError{Field: k.String(), Plugin: plugin, Owner: prev}
	}
	o.m[k] = plugin
	return nil
}

// hooks appends plugin to the owners of a container's OCI hooks, which
// never conflict.
func (o *owners) hooks(container, plugin string) {
	k := ownerKey{container: container, field: api.Field_OciHooks}
	if prev := o.m[k]; prev != "" && !strings.Contains(","+prev+",", ","+plugin+",") {
		plugin = prev + "," + plugin
	}
	o.m[k] = plugin
}

// proto returns the ownership record in its wire form, for validators.
func (o *owners) proto() *api.OwningPlugins {
	out := &api.OwningPlugins{Owners: map[string]*api.FieldOwners{}}
	for k, plugin := range o.m {
		if k.field == api.Field_None {
			continue
		}
		fo := out.Owners[k.container]
		if fo == nil {
			fo = &api.FieldOwners{Simple: map[int32]string{}, Compound: map[int32]*api.CompoundFieldOwners{}}
			out.Owners[k.container] = fo
		}
		if k.entry == "" {
			fo.Simple[int32(k.field)] = plugin
			continue
		}
		c := fo.Compound[int32(k.field)]
		if c == nil {
			c = &api.CompoundFieldOwners{Owners: map[string]string{}}
			fo.Compound[int32(k.field)] = c
		}
		c.Owners[k.entry] = plugin
	}
	return out
}

// linuxFields maps paths of leaf fields below LinuxContainerAdjustment and
// LinuxContainerUpdate to their Field numbers. Entries ending in "[]" are
// compound: owned per map key or list entry.
var linuxFields = map[string]api.Field{
	"resources.memory.limit":              api.Field_MemLimit,
	"resources.memory.reservation":        api.Field_MemReservation,
	"resources.memory.swap":               api.Field_MemSwapLimit,
	"resources.memory.kernel":             api.Field_MemKernelLimit,
	"resources.memory.kernel_tcp":         api.Field_MemTCPLimit,
	"resources.memory.swappiness":         api.Field_MemSwappiness,
	"resources.memory.disable_oom_killer": api.Field_MemDisableOomKiller,
	"resources.memory.use_hierarchy":      api.Field_MemUseHierarchy,
	"resources.cpu.shares":                api.Field_CPUShares,
	"resources.cpu.quota":                 api.Field_CPUQuota,
	"resources.cpu.period":                api.Field_CPUPeriod,
	"resources.cpu.realtime_runtime":      api.Field_CPURealtimeRuntime,
	"resources.cpu.realtime_period":       api.Field_CPURealtimePeriod,
	"resources.cpu.cpus":                  api.Field_CPUSetCPUs,
	"resources.cpu.mems":                  api.Field_CPUSetMems,
	"resources.pids":                      api.Field_PidsLimit,
	"resources.hugepage_limits[]":         api.Field_HugepageLimits,
	"resources.blockio_class":             api.Field_BlockioClass,
	"resources.rdt_class":                 api.Field_RdtClass,
	"resources.unified[]":                 api.Field_CgroupsUnified,
	"cgroups_path":                        api.Field_CgroupsPath,
	"oom_score_adj":                       api.Field_OomScoreAdj,
	"io_priority":                         api.Field_IoPriority,
	"seccomp_policy":                      api.Field_SeccompPolicy,
	"namespaces[]":                        api.Field_Namespace,
	"sysctl[]":                            api.Field_Sysctl,
	"net_devices[]":                       api.Field_LinuxNetDevices,
	"scheduler":                           api.Field_LinuxSched,
	"rdt.clos_id":                         api.Field_RdtClosID,
	"rdt.schemata":                        api.Field_RdtSchemata,
	"rdt.enable_monitoring":               api.Field_RdtEnableMonitoring,
	"memory_policy":                       api.Field_MemoryPolicy,
	"devices[]":                           api.Field_Devices,
}
