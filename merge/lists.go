package merge

import (
	"slices"
	"strings"

	"github.com/nrinet/nrinet/api"
)

// mergeList merges one plugin's entries of a list adjustment whose entries
// have a key (mounts by destination, env by name, devices by path); keyOf
// returns an entry's key and whether it is a removal marker ("-key").
//
// A removal drops what earlier plugins set under that key in this request
// (the remover becomes the key's owner) and, unless the plugin also sets
// the key, is forwarded as the marker, after the plugin's sets. A set
// claims the key and is appended. It returns the new merged list and the keys the plugin
// touched, for the caller to update its view of the container.
func mergeList[T any](o *Owners, container string, f api.Field, plugin string, in, out []T, keyOf func(T) (string, bool)) ([]T, map[string]bool, error) {
	if len(in) == 0 {
		return out, nil, nil
	}
	removes := make(map[string]bool)
	sets := make(map[string]bool)
	for _, e := range in {
		if k, remove := keyOf(e); remove {
			removes[k] = true
		} else {
			sets[k] = true
		}
	}
	out = slices.DeleteFunc(out, func(e T) bool {
		k, marker := keyOf(e)
		switch {
		case marker:
			return removes[k] && !sets[k] // re-forwarded below
		case removes[k]:
			o.clear(plugin, key{container, f, k})
			return true
		}
		return false
	})
	for _, e := range in {
		k, remove := keyOf(e)
		if remove {
			continue
		}
		if err := o.claim(plugin, key{container, f, k}); err != nil {
			return nil, nil, err
		}
		// A plugin listing a key twice: its last entry wins.
		out = slices.DeleteFunc(out, func(x T) bool { xk, marker := keyOf(x); return !marker && xk == k })
		out = append(out, e)
	}
	// Removals are forwarded after the sets, as upstream does, but in the
	// plugin's order.
	forwarded := make(map[string]bool)
	for _, e := range in {
		if k, remove := keyOf(e); remove && !sets[k] && !forwarded[k] {
			out = append(out, e)
			forwarded[k] = true
		}
	}
	touched := removes
	for k := range sets {
		touched[k] = true
	}
	return out, touched, nil
}

// mountKey, envKey and deviceKey are the keyOf functions of mergeList.
// Paths are compared cleaned (api.EntryPath), as the OCI helper does.
func mountKey(m *api.Mount) (string, bool)        { return pathKey(m.GetDestination()) }
func envKey(kv *api.KeyValue) (string, bool)      { return strings.CutPrefix(kv.GetKey(), "-") }
func deviceKey(d *api.LinuxDevice) (string, bool) { return pathKey(d.GetPath()) }

func pathKey(p string) (string, bool) {
	p, remove := strings.CutPrefix(p, "-")
	return api.EntryPath(p), remove
}

// applyList updates a view list: entries whose key the plugin touched are
// dropped, then the plugin's sets appended.
func applyList[T any](view, in []T, touched map[string]bool, keyOf func(T) (string, bool)) []T {
	view = slices.DeleteFunc(view, func(e T) bool { k, _ := keyOf(e); return touched[k] })
	for _, e := range in {
		if k, remove := keyOf(e); !remove {
			view = slices.DeleteFunc(view, func(x T) bool { xk, _ := keyOf(x); return xk == k })
			view = append(view, e)
		}
	}
	return view
}

// envVarKey is the key of an environment entry of a container, "K=V",
// or of a removal "-K".
func envVarKey(s string) (string, bool) {
	k, _, _ := strings.Cut(s, "=")
	return strings.CutPrefix(k, "-")
}
