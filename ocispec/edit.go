package ocispec

import (
	"slices"
	"strings"
)

// This file holds the two generic edit shapes every adjustment kind is
// reduced to, and the order in which they are applied:
//
//   - mapEdit, for map-valued fields (annotations, sysctl, net devices,
//     unified): all removals, then all sets, each in sorted key order.
//   - listEdit, for keyed lists (mounts, env, devices, namespaces,
//     rlimits, hugepage limits): all removals, then the adds in the order
//     given, an add replacing the entries with the same key.

// removalPrefix marks a key, path or type for removal in NRI adjustments.
const removalPrefix = "-"

// unmark strips the removal marker from key and reports whether it was
// there.
func unmark(key string) (string, bool) {
	if rest, ok := strings.CutPrefix(key, removalPrefix); ok {
		return rest, true
	}
	return key, false
}

// entry is one key and value to set.
type entry[V any] struct {
	key string
	val V
}

// mapEdit is a validated change to a string-keyed map.
type mapEdit[V any] struct {
	remove []string   // keys to delete, sorted
	set    []entry[V] // entries to set, sorted by key
}

// prepareMap splits an NRI map with removal markers into a mapEdit. Keys
// are checked to be non-empty once unmarked; conv checks and converts an
// entry to set (its field argument names the entry for errors).
func prepareMap[In, Out any](field string, in map[string]In, conv func(field, key string, v In) (Out, error)) (mapEdit[Out], error) {
	var e mapEdit[Out]
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f := field + "[" + quote(k) + "]"
		name, removed := unmark(k)
		if name == "" {
			return e, invalid(f, k, "empty key")
		}
		if removed {
			e.remove = append(e.remove, name)
			continue
		}
		v, err := conv(f, name, in[k])
		if err != nil {
			return e, err
		}
		e.set = append(e.set, entry[Out]{key: name, val: v})
	}
	return e, nil
}

// sameString is the conv function of prepareMap for plain string maps.
func sameString(_, _ string, v string) (string, error) { return v, nil }

func (e mapEdit[V]) empty() bool { return len(e.remove) == 0 && len(e.set) == 0 }

// apply applies the edit to m, allocating m if something is set, and
// returns the result.
func (e mapEdit[V]) apply(m map[string]V) map[string]V {
	for _, k := range e.remove {
		delete(m, k)
	}
	if len(e.set) > 0 && m == nil {
		m = make(map[string]V, len(e.set))
	}
	for _, s := range e.set {
		m[s.key] = s.val
	}
	return m
}

// listEdit is a validated change to a list whose entries are identified
// by a key (a mount's destination, a variable's name, ...).
type listEdit[T any] struct {
	remove []string // keys whose entries are removed
	add    []T      // entries to add, in order
}

func (e listEdit[T]) empty() bool { return len(e.remove) == 0 && len(e.add) == 0 }

// apply returns list with e applied and the entries it dropped (removed
// or replaced), in their original order. list itself is not modified. An
// added entry takes the position of the first entry with its key and the
// other entries with that key are dropped; without such an entry it is
// appended.
func (e listEdit[T]) apply(list []T, key func(T) string) (out, dropped []T) {
	out = make([]T, 0, len(list)+len(e.add))
	for _, x := range list {
		if slices.Contains(e.remove, key(x)) {
			dropped = append(dropped, x)
			continue
		}
		out = append(out, x)
	}
	for _, a := range e.add {
		k, placed := key(a), false
		n := 0
		for _, x := range out {
			if key(x) != k {
				out[n] = x
				n++
				continue
			}
			dropped = append(dropped, x)
			if !placed {
				out[n] = a
				n++
				placed = true
			}
		}
		out = out[:n]
		if !placed {
			out = append(out, a)
		}
	}
	return out, dropped
}
