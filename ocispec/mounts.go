package ocispec

import (
	"fmt"
	"path"
	"slices"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
)

// mountPlan is the validated mount part of an adjustment.
type mountPlan struct {
	edit listEdit[rspec.Mount]
	// propagation is the strongest rootfs propagation an added mount
	// needs: "", "rslave" or "rshared".
	propagation string
}

// prepareMounts validates the mounts of an adjustment. A destination
// marked with "-" removes the mounts at that path. Destinations must be
// absolute and are compared in cleaned form, so "/data/" and "/data" name
// the same mount point.
func prepareMounts(mounts []*api.Mount) (mountPlan, error) {
	var p mountPlan
	for i, m := range mounts {
		field := fmt.Sprintf("mounts[%d]", i)
		if m == nil {
			return p, invalid(field, "<nil>", "nil mount")
		}
		dest, removed := unmark(m.GetDestination())
		if !path.IsAbs(dest) {
			return p, invalid(field+".destination", m.GetDestination(), "not an absolute path")
		}
		if removed {
			p.edit.remove = append(p.edit.remove, api.EntryPath(dest))
			continue
		}
		p.edit.add = append(p.edit.add, rspec.Mount{
			Destination: dest,
			Type:        m.GetType(),
			Source:      m.GetSource(),
			Options:     slices.Clone(m.GetOptions()),
		})
		switch mountPropagation(m.GetOptions()) {
		case "rshared":
			p.propagation = "rshared"
		case "rslave":
			if p.propagation == "" {
				p.propagation = "rslave"
			}
		}
	}
	return p, nil
}

// mountPropagation returns the last recursive propagation option
// ("rprivate", "rshared" or "rslave") in opts, the one mount(8) applies.
func mountPropagation(opts []string) string {
	prop := ""
	for _, o := range opts {
		switch o {
		case "rprivate", "rshared", "rslave":
			prop = o
		}
	}
	return prop
}

func mountKey(m rspec.Mount) string { return api.EntryPath(m.Destination) }

// apply applies the mount plan. When the adjustment has mounts, the
// resulting list is ordered with sortMounts. An added mount with rshared
// propagation makes the rootfs propagation rshared; one with rslave makes
// it rslave unless it already is rshared or rslave. The host side of the
// propagation (that the mount source is itself shared or a slave) is not
// checked here: that is the runtime's business.
func (p mountPlan) apply(spec *rspec.Spec) {
	if p.edit.empty() {
		return
	}
	spec.Mounts, _ = p.edit.apply(spec.Mounts, mountKey)
	sortMounts(spec.Mounts)
	switch p.propagation {
	case "rshared":
		ensureLinux(spec).RootfsPropagation = "rshared"
	case "rslave":
		l := ensureLinux(spec)
		if l.RootfsPropagation != "rshared" && l.RootfsPropagation != "rslave" {
			l.RootfsPropagation = "rslave"
		}
	}
}

// sortMounts orders mounts so that no mount comes before a mount of one
// of its parent directories: a stable sort by the number of components of
// the cleaned destination ("/" has 0, "/a/b" has 2). Mounts with equally
// deep destinations keep their relative order. This is the ordering
// Docker, CRI-O and upstream NRI use; upstream NRI in addition sorts
// equally deep mounts by destination, which would reorder the runtime's
// own mounts for no benefit.
func sortMounts(mounts []rspec.Mount) {
	slices.SortStableFunc(mounts, func(a, b rspec.Mount) int {
		return pathDepth(a.Destination) - pathDepth(b.Destination)
	})
}

// pathDepth returns the number of components of the cleaned path p.
func pathDepth(p string) int {
	p = strings.Trim(path.Clean(p), "/")
	if p == "" || p == "." {
		return 0
	}
	return strings.Count(p, "/") + 1
}
