// Package ocispec applies NRI container adjustments and container updates
// to an OCI runtime spec (github.com/opencontainers/runtime-spec/specs-go),
// as a runtime does after the NRI plugins have answered a CreateContainer
// or UpdateContainer request.
//
//   - [ApplyAdjustment] applies a merged [api.ContainerAdjustment].
//   - [ApplyResources] applies [api.LinuxResources].
//   - [ApplyUpdate] applies an [api.ContainerUpdate] (resources only).
//
// Block I/O and RDT classes are names only the runtime can resolve;
// [WithBlockIOClassResolver] and [WithRDTClassResolver] supply resolvers.
//
// # Determinism
//
// The result depends only on the spec and the input, never on Go's map
// iteration order (upstream NRI's generator walks maps in that order, so
// an annotation both removed and set there ends up either way):
//
//   - Maps (annotations, linux.sysctl, linux.net_devices): all removals
//     of the map are applied first, then all sets, each in sorted key
//     order. A key both removed ("-k") and set ("k") therefore always ends
//     up set to the new value. (resources.unified has no removal marker;
//     its entries are set in sorted key order.)
//   - Keyed lists (mounts by destination, env by name, linux.devices by
//     path, linux.namespaces by type, rlimits by type, hugepage limits by
//     page size): all removals first, then the adds in the order given.
//     An add takes the position of the first entry with the same key and
//     drops any further ones; otherwise it is appended. Two adds with the
//     same key leave the later one.
//   - Appended lists (hooks, device cgroup rules) keep the given order.
//
// # Removal markers
//
// NRI encodes removals in keys: annotation, sysctl and net device keys
// "-k", mount destination "-/path", env key "-NAME", device path
// "-/dev/x" and namespace type "-net" remove the named entry (removing an
// absent entry is not an error); linux.rdt.remove clears Linux.IntelRdt.
// Args starting with "" replace the command line with the rest.
//
// # What is applied where
//
//   - annotations → Annotations; env → Process.Env (a set variable keeps
//     the position of its existing definition, a removed-and-set one moves
//     to the end); args → Process.Args; hooks → appended to Hooks by phase;
//     rlimits → Process.Rlimits, replacing the limit of the same type.
//   - mounts → Mounts. Destinations are compared in cleaned form. After a
//     mount adjustment the list is stably sorted by the depth of the
//     destination, so a mount never precedes its parent's mount; mounts of
//     equal depth keep their order (upstream NRI also sorts those by
//     path). A mount with "rshared" propagation makes
//     Linux.RootfsPropagation "rshared", one with "rslave" makes it
//     "rslave" unless already "rshared" or "rslave", as upstream does;
//     checking the propagation of the mount source on the host is left to
//     the caller.
//   - linux.devices → Linux.Devices, plus device cgroup rules in
//     Linux.Resources.Devices: an added device (except a FIFO) gets an
//     appended allow rule for its type ("u" counts as "c"), major and
//     minor with access "rwm"; a removed or replaced device loses the
//     allow rules for exactly its node, unless another device kept from
//     the spec has the same node.
//   - linux.resources → Linux.Resources: present optional values are set,
//     zero included, absent ones left alone; a memory limit without a swap
//     value also sets swap to the limit (as upstream); non-empty cpus and
//     mems are set; device cgroup rules are appended after those of added
//     devices; a pids limit below 0 means unlimited (nil). A present
//     blockio_class replaces Linux.Resources.BlockIO and a present
//     rdt_class replaces Linux.IntelRdt with the resolver's settings; the
//     empty class clears them and needs no resolver.
//   - linux.cgroups_path (if non-empty) → Linux.CgroupsPath;
//     linux.oom_score_adj → Process.OOMScoreAdj; linux.io_priority →
//     Process.IOPriority (class NONE clears it); linux.scheduler →
//     Process.Scheduler (policy SCHED_NONE clears it); linux.seccomp_policy
//     replaces Linux.Seccomp; linux.memory_policy replaces
//     Linux.MemoryPolicy; linux.namespaces → Linux.Namespaces ("net" and
//     "mnt" are accepted for "network" and "mount"); linux.sysctl →
//     Linux.Sysctl; linux.net_devices → Linux.NetDevices.
//   - linux.rdt → Linux.IntelRdt, after any rdt_class: remove clears it,
//     then each present field (clos_id, schemata, enable_monitoring) is
//     set, creating it if needed.
//
// Missing parts of the spec (Process, Linux, Linux.Resources, Hooks, maps)
// are created when something is set in them, not for removals alone.
//
// # Errors and atomicity
//
// The input is validated and converted, and classes are resolved, before
// the spec is modified; applying the result cannot fail. So when an
// Apply function returns an error, the spec is unchanged. Bad input (an
// empty or relative mount destination, an unknown namespace, rlimit or
// device type, an out of range OOM score, an unknown enum value, ...)
// gives an error wrapping [ErrInvalid] that names the field and value. The
// spec is modified in place, including the maps and slices it refers to;
// callers sharing parts of a spec between containers must copy it first.
//
// # Left to the caller
//
// CDI devices (adjustment CDI_devices) need a CDI registry and are not
// applied. Filtering of annotations or sysctls and checks of the final
// resources are policy, not part of this package.
package ocispec
