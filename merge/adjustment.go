package merge

import (
	"github.com/nrinet/nrinet/api"
)

// Adjustment merges the ContainerAdjustments the plugins of one
// CreateContainer request return, in plugin order, and keeps the view of
// the container the next plugin is shown: the container with the
// adjustments so far applied.
type Adjustment struct {
	id     string
	owners *Owners
	out    *api.ContainerAdjustment
	orig   *api.Container
	view   *api.Container // nil until the first change; then a clone of orig
}

// NewAdjustment starts the merge for container ctr, recording owners in
// o. ctr is not modified.
func NewAdjustment(o *Owners, ctr *api.Container) *Adjustment {
	return &Adjustment{id: ctr.GetId(), owners: o, out: &api.ContainerAdjustment{}, orig: ctr}
}

// Container returns the container as the next plugin should see it. The
// caller must not modify it.
func (a *Adjustment) Container() *api.Container {
	if a.view == nil {
		return a.orig
	}
	return a.view
}

// Result returns the merged adjustment. Fields no plugin set are unset.
func (a *Adjustment) Result() *api.ContainerAdjustment { return a.out }

// mutable returns the view, cloned from the original container on first
// use.
func (a *Adjustment) mutable() *api.Container {
	if a.view == nil {
		if a.orig == nil {
			a.view = &api.Container{}
		} else {
			a.view = a.orig.CloneVT()
		}
	}
	return a.view
}

func (a *Adjustment) mutableLinux() *api.LinuxContainer {
	v := a.mutable()
	if v.Linux == nil {
		v.Linux = &api.LinuxContainer{}
	}
	return v.Linux
}

func (a *Adjustment) outLinux() *api.LinuxContainerAdjustment {
	if a.out.Linux == nil {
		a.out.Linux = &api.LinuxContainerAdjustment{}
	}
	return a.out.Linux
}

// Apply merges the adjustment of one plugin, in upstream's order:
// annotations, mounts, env, args, hooks, the Linux settings, rlimits, CDI
// devices. An error, a *ConflictError for a field another plugin set,
// leaves the merge unusable: the request fails.
func (a *Adjustment) Apply(plugin string, adj *api.ContainerAdjustment) error {
	if adj == nil {
		return nil
	}
	steps := []func(string, *api.ContainerAdjustment) error{
		a.annotations, a.mounts, a.env, a.args, a.hooks, a.linux, a.rlimits, a.cdiDevices,
	}
	for _, step := range steps {
		if err := step(plugin, adj); err != nil {
			return err
		}
	}
	return nil
}

// linux merges the Linux part of an adjustment.
func (a *Adjustment) linux(plugin string, adj *api.ContainerAdjustment) error {
	l := adj.GetLinux()
	if l == nil {
		return nil
	}
	steps := []func(string, *api.LinuxContainerAdjustment) error{
		a.devices, a.resources, a.cgroupsPath, a.oomScoreAdj, a.ioPriority, a.seccompPolicy,
		a.namespaces, a.sysctl, a.netDevices, a.scheduler, a.rdt, a.memoryPolicy,
	}
	for _, step := range steps {
		if err := step(plugin, l); err != nil {
			return err
		}
	}
	return nil
}
