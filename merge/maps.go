package merge

import (
	"slices"
	"strings"

	"github.com/nrinet/nrinet/api"
)

// mergeMap merges one plugin's entries of a map adjustment (annotations,
// sysctls, net devices), in key order. A key "-k" removes k: from what
// earlier plugins set in this request (the remover becomes k's owner) and,
// as a marker forwarded in out, from the container. Setting k claims it.
// view is the container as the next plugin sees it; removed is the value
// a marker carries.
func mergeMap[V any](o *Owners, container string, f api.Field, plugin string, in map[string]V, out, view *map[string]V, removed V) error {
	if len(in) == 0 {
		return nil
	}
	keys := sortedKeys(in)
	sets := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !strings.HasPrefix(k, "-") {
			sets[k] = true
		}
	}
	if *out == nil {
		*out = make(map[string]V, len(in))
	}
	for _, k := range keys {
		name, remove := strings.CutPrefix(k, "-")
		if !remove {
			continue
		}
		if _, set := (*out)[name]; set {
			delete(*out, name)
			o.clear(plugin, key{container, f, name})
		} else if sets[name] {
			o.clear(plugin, key{container, f, name})
		}
		(*out)["-"+name] = removed
		delete(*view, name)
	}
	for _, k := range keys {
		if !sets[k] {
			continue
		}
		if err := o.claim(plugin, key{container, f, k}); err != nil {
			return err
		}
		(*out)[k] = in[k]
		if *view == nil {
			*view = make(map[string]V)
		}
		(*view)[k] = in[k]
	}
	return nil
}

// sortedKeys returns the keys of m in order, in one allocation.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
