package merge

import (
	"fmt"

	"github.com/nrinet/nrinet/api"
)

// Updates merges the ContainerUpdates plugins return during one request
// into one update per container, in the order containers first appear.
type Updates struct {
	owners   *Owners
	creating string // the container being created, which may not be updated

	target    string              // the container an UpdateContainer request is for
	requested *api.LinuxResources // its resources: requested, then as changed
	touched   bool

	byID  map[string]*api.ContainerUpdate
	order []string
}

// NewUpdates starts merging updates, recording owners in o.
func NewUpdates(o *Owners) *Updates {
	return &Updates{owners: o, byID: make(map[string]*api.ContainerUpdate)}
}

// ForCreate makes updates of container id, which is being created, an
// error: plugins adjust it instead.
func (u *Updates) ForCreate(id string) *Updates {
	u.creating = id
	return u
}

// ForUpdate makes container id the target of an UpdateContainer request
// with the requested resources: plugins' updates of it change those, and
// [Updates.Target] returns the result.
func (u *Updates) ForUpdate(id string, requested *api.LinuxResources) *Updates {
	u.target = id
	if requested != nil {
		u.requested = requested.CloneVT()
	} else {
		u.requested = &api.LinuxResources{}
	}
	return u
}

// Apply merges the updates of one plugin. An update that conflicts with
// another plugin's is dropped, claims and all, if it has IgnoreFailure;
// otherwise Apply returns the conflict and the request fails. An update
// without container ID, or of the container being created, always fails.
func (u *Updates) Apply(plugin string, list []*api.ContainerUpdate) error {
	for _, up := range list {
		switch id := up.GetContainerId(); id {
		case "":
			return fmt.Errorf("plugin %q sent an update without a container ID", plugin)
		case u.creating:
			return fmt.Errorf("plugin %q asked to update container %q, which is being created; adjust it instead", plugin, id)
		}
		if err := u.apply(plugin, up); err != nil {
			if up.GetIgnoreFailure() {
				continue
			}
			return err
		}
	}
	return nil
}

func (u *Updates) apply(plugin string, up *api.ContainerUpdate) error {
	id := up.GetContainerId()
	cur := u.byID[id]
	var base *api.LinuxResources
	switch {
	case id == u.target:
		base = u.requested
	case cur != nil:
		base = cur.GetLinux().GetResources()
	}
	work := &api.LinuxResources{}
	if base != nil {
		work = base.CloneVT()
	}
	tx := u.owners.begin()
	if err := mergeResources(tx, id, plugin, up.GetLinux().GetResources(), work); err != nil {
		return err
	}
	tx.commit()
	if cur == nil {
		cur = &api.ContainerUpdate{ContainerId: id, IgnoreFailure: true}
		u.byID[id] = cur
		u.order = append(u.order, id)
	}
	cur.IgnoreFailure = cur.IgnoreFailure && up.GetIgnoreFailure()
	cur.Linux = &api.LinuxContainerUpdate{Resources: work}
	if id == u.target {
		u.requested, u.touched = work, true
	}
	return nil
}

// Resources returns the resources of the target of an UpdateContainer
// request as the next plugin should see them. The caller must not modify
// them.
func (u *Updates) Resources() *api.LinuxResources { return u.requested }

// Others returns the merged updates of every container but the target.
func (u *Updates) Others() []*api.ContainerUpdate {
	var out []*api.ContainerUpdate
	for _, id := range u.order {
		if id != u.target {
			out = append(out, u.byID[id])
		}
	}
	return out
}

// Target returns the update of the target of an UpdateContainer request
// with its full effective resources, or false if no plugin changed them.
func (u *Updates) Target() (*api.ContainerUpdate, bool) {
	if !u.touched {
		return nil, false
	}
	return u.byID[u.target], true
}
