// Package merge combines what several NRI plugins return for one request
// into the one result a runtime applies: the [Adjustment] of a container
// being created and the [Updates] of containers' resources, with an owner
// for every field.
//
// It is the merge of containerd NRI v0.12.5, rule for rule, with its
// known defects fixed (docs/adjustments.md lists them):
//
//   - Within one request every field of every container has at most one
//     owner. A plugin setting a field another plugin set is a
//     [*ConflictError] naming both and the field; a plugin setting its own
//     field again replaces its value.
//   - Compound fields are owned per entry: annotation key, mount
//     destination, env name, device path, CDI device, hugepage size,
//     unified key, rlimit type, namespace type, sysctl key, net device.
//   - Entries are removed with "-" markers ("-key", "-/mnt", "-NAME").
//     Removing an entry an earlier plugin set in this request drops it and
//     makes the remover its owner: afterwards only the remover may set it.
//     Removals of entries nobody set in this request are forwarded as
//     markers for the runtime to apply to the container it has.
//   - OCI hooks never conflict: every plugin's hooks are appended.
//
// The merged result keeps the wire encoding, so a key both removed (of the
// container's original value) and set appears twice, as "-k" and "k";
// [github.com/nrinet/nrinet/ocispec] applies removals first, so the set
// wins, every time.
//
// [Networks] merges the network plugins' parts of a pod's network (nrinet's
// pod network extension) the same way: an owner per address family,
// interface, route, DNS and info key, a [*ConflictError] or, under
// [ConflictAggregate], the first plugin's value kept with a warning, and
// the primary address picked by a [FamilyPreference].
//
// Merging is pure computation: no I/O, no locks, no plugin calls. One
// [Owners] is shared by the Adjustment and the Updates of a request and is
// what validators receive ([Owners.Proto]).
package merge
