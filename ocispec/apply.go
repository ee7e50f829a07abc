package ocispec

import (
	"errors"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
)

// errNilSpec is returned when there is no spec to apply to.
var errNilSpec = errors.New("ocispec: nil spec")

// plan is a validated, converted ContainerAdjustment. Building it is the
// only step that can fail; applying it cannot, which is what keeps the
// spec unchanged on error.
type plan struct {
	annotations  mapEdit[string]
	env          listEdit[string]
	args         []string
	hooks        hookPlan
	devices      listEdit[rspec.LinuxDevice]
	cgroupsPath  string
	oomScoreAdj  *int
	ioPrioSet    bool
	ioPrio       *rspec.LinuxIOPriority // nil with ioPrioSet: clear
	schedSet     bool
	sched        *rspec.Scheduler // nil with schedSet: clear
	seccomp      *rspec.LinuxSeccomp
	namespaces   listEdit[rspec.LinuxNamespace]
	sysctl       mapEdit[string]
	netDevices   mapEdit[rspec.LinuxNetDevice]
	memoryPolicy *rspec.LinuxMemoryPolicy
	resources    *resourcePlan
	rdt          *rdtPlan
	mounts       mountPlan
	rlimits      listEdit[rspec.POSIXRlimit]
}

// ApplyAdjustment applies the (merged) container adjustment adj to spec,
// in place. A nil adj changes nothing.
//
// The adjustment is validated, and the block I/O and RDT classes it names
// are resolved, before spec is touched: if ApplyAdjustment returns an
// error, spec is unchanged. Errors for bad input wrap ErrInvalid and name
// the offending field and value; a class without a resolver gives an
// error wrapping ErrNoResolver.
//
// Not applied: adj.CDI_devices, whose names only a CDI registry can turn
// into spec edits. The caller must inject them (before or after calling
// ApplyAdjustment); they are not an error here.
//
// The package documentation describes how each kind of adjustment is
// applied and in which order.
func ApplyAdjustment(spec *rspec.Spec, adj *api.ContainerAdjustment, opts ...Option) error {
	if spec == nil {
		return errNilSpec
	}
	if adj == nil {
		return nil
	}
	o, err := newOptions(opts)
	if err != nil {
		return err
	}
	p, err := preparePlan(adj, o)
	if err != nil {
		return err
	}
	p.apply(spec)
	return nil
}

// ApplyResources applies the Linux resources r to spec.Linux.Resources
// (and, for an RDT class, spec.Linux.IntelRdt), in place, the same way
// ApplyAdjustment applies adj.linux.resources. A nil r changes nothing. On
// error spec is unchanged; error field names are those of r.
func ApplyResources(spec *rspec.Spec, r *api.LinuxResources, opts ...Option) error {
	return applyResources(spec, "", r, opts)
}

// ApplyUpdate applies the container update u, which only carries
// resources, to spec, as ApplyResources does with u.linux.resources. u
// must not be nil; an update without resources changes nothing. The
// container ID in u is not checked against spec.
func ApplyUpdate(spec *rspec.Spec, u *api.ContainerUpdate, opts ...Option) error {
	if u == nil {
		return errors.New("ocispec: nil container update")
	}
	return applyResources(spec, "linux.resources.", u.GetLinux().GetResources(), opts)
}

func applyResources(spec *rspec.Spec, field string, r *api.LinuxResources, opts []Option) error {
	if spec == nil {
		return errNilSpec
	}
	o, err := newOptions(opts)
	if err != nil {
		return err
	}
	p, err := prepareResources(field, r, o)
	if err != nil {
		return err
	}
	p.apply(spec)
	return nil
}

// preparePlan validates and converts adj.
func preparePlan(adj *api.ContainerAdjustment, o *options) (*plan, error) {
	var (
		p   = &plan{}
		err error
	)
	linux := adj.GetLinux()
	if p.annotations, err = prepareAnnotations(adj.GetAnnotations()); err != nil {
		return nil, err
	}
	if p.mounts, err = prepareMounts(adj.GetMounts()); err != nil {
		return nil, err
	}
	if p.env, err = prepareEnv(adj.GetEnv()); err != nil {
		return nil, err
	}
	if p.hooks, err = prepareHooks(adj.GetHooks()); err != nil {
		return nil, err
	}
	if p.rlimits, err = prepareRlimits(adj.GetRlimits()); err != nil {
		return nil, err
	}
	p.args = prepareArgs(adj.GetArgs())
	if p.devices, err = prepareDevices(linux.GetDevices()); err != nil {
		return nil, err
	}
	if p.resources, err = prepareResources("linux.resources.", linux.GetResources(), o); err != nil {
		return nil, err
	}
	p.cgroupsPath = linux.GetCgroupsPath()
	if p.oomScoreAdj, err = prepareOOMScoreAdj(linux.GetOomScoreAdj()); err != nil {
		return nil, err
	}
	if ip := linux.GetIoPriority(); ip != nil {
		if p.ioPrio, err = prepareIOPriority(ip); err != nil {
			return nil, err
		}
		p.ioPrioSet = true
	}
	if s := linux.GetSeccompPolicy(); s != nil {
		if p.seccomp, err = prepareSeccomp(s); err != nil {
			return nil, err
		}
	}
	if p.namespaces, err = prepareNamespaces(linux.GetNamespaces()); err != nil {
		return nil, err
	}
	if p.sysctl, err = prepareSysctl(linux.GetSysctl()); err != nil {
		return nil, err
	}
	if p.netDevices, err = prepareNetDevices(linux.GetNetDevices()); err != nil {
		return nil, err
	}
	if s := linux.GetScheduler(); s != nil {
		if p.sched, err = prepareScheduler(s); err != nil {
			return nil, err
		}
		p.schedSet = true
	}
	p.rdt = prepareRDT(linux.GetRdt())
	if m := linux.GetMemoryPolicy(); m != nil {
		if p.memoryPolicy, err = prepareMemoryPolicy(m); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// apply applies a validated plan. The order follows upstream NRI's
// generator where it matters: device rules for added devices come before
// the adjustment's own device cgroup rules, the RDT class before the RDT
// settings, and mounts are sorted last.
func (p *plan) apply(spec *rspec.Spec) {
	applyAnnotations(spec, p.annotations)
	applyEnv(spec, p.env)
	applyArgs(spec, p.args)
	p.hooks.apply(spec)
	applyDevices(spec, p.devices)
	if p.cgroupsPath != "" {
		ensureLinux(spec).CgroupsPath = p.cgroupsPath
	}
	if p.oomScoreAdj != nil {
		ensureProcess(spec).OOMScoreAdj = p.oomScoreAdj
	}
	if p.ioPrioSet && (p.ioPrio != nil || spec.Process != nil) {
		ensureProcess(spec).IOPriority = p.ioPrio
	}
	if p.schedSet && (p.sched != nil || spec.Process != nil) {
		ensureProcess(spec).Scheduler = p.sched
	}
	if p.seccomp != nil {
		ensureLinux(spec).Seccomp = p.seccomp
	}
	applyNamespaces(spec, p.namespaces)
	applySysctl(spec, p.sysctl)
	applyNetDevices(spec, p.netDevices)
	if p.memoryPolicy != nil {
		ensureLinux(spec).MemoryPolicy = p.memoryPolicy
	}
	p.resources.apply(spec)
	p.rdt.apply(spec)
	p.mounts.apply(spec)
	applyRlimits(spec, p.rlimits)
}

func ensureProcess(spec *rspec.Spec) *rspec.Process {
	if spec.Process == nil {
		spec.Process = &rspec.Process{}
	}
	return spec.Process
}

func ensureLinux(spec *rspec.Spec) *rspec.Linux {
	if spec.Linux == nil {
		spec.Linux = &rspec.Linux{}
	}
	return spec.Linux
}

func ensureResources(spec *rspec.Spec) *rspec.LinuxResources {
	l := ensureLinux(spec)
	if l.Resources == nil {
		l.Resources = &rspec.LinuxResources{}
	}
	return l.Resources
}
