package ocispec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
)

// resourcePlan is a validated LinuxResources, with its classes resolved.
// Pointer fields are nil when the input leaves that setting untouched.
type resourcePlan struct {
	memory    rspec.LinuxMemory // non-nil fields are set
	cpu       rspec.LinuxCPU    // non-nil fields and non-empty strings are set
	hugepages listEdit[rspec.LinuxHugepageLimit]
	unified   []entry[string] // sorted by key
	pidsSet   bool
	pids      *int64 // nil: unlimited
	rules     []rspec.LinuxDeviceCgroup
	blockIO   *rspec.LinuxBlockIO // nil with blockIOSet: clear
	blockSet  bool
	rdt       *rspec.LinuxIntelRdt // nil with rdtSet: clear
	rdtSet    bool
}

// prepareResources validates r and resolves its classes; field prefixes
// the names of r's fields in errors ("linux.resources." or "").
func prepareResources(field string, r *api.LinuxResources, o *options) (*resourcePlan, error) {
	if r == nil {
		return nil, nil
	}
	p := &resourcePlan{}

	if m := r.GetMemory(); m != nil {
		p.memory = rspec.LinuxMemory{
			Limit:            optInt64(m.GetLimit()),
			Reservation:      optInt64(m.GetReservation()),
			Swap:             optInt64(m.GetSwap()),
			Kernel:           optInt64(m.GetKernel()),
			KernelTCP:        optInt64(m.GetKernelTcp()),
			Swappiness:       optUint64(m.GetSwappiness()),
			DisableOOMKiller: optBool(m.GetDisableOomKiller()),
			UseHierarchy:     optBool(m.GetUseHierarchy()),
		}
		// Like upstream NRI (and runtime-tools), a new limit without a
		// swap setting also sets memory+swap to the limit, which keeps
		// the pair consistent (swap >= limit) and swap disabled.
		if p.memory.Limit != nil && p.memory.Swap == nil {
			p.memory.Swap = ptr(*p.memory.Limit)
		}
	}

	if c := r.GetCpu(); c != nil {
		p.cpu = rspec.LinuxCPU{
			Shares:          optUint64(c.GetShares()),
			Quota:           optInt64(c.GetQuota()),
			Period:          optUint64(c.GetPeriod()),
			RealtimeRuntime: optInt64(c.GetRealtimeRuntime()),
			RealtimePeriod:  optUint64(c.GetRealtimePeriod()),
			Cpus:            c.GetCpus(),
			Mems:            c.GetMems(),
		}
	}

	for i, h := range r.GetHugepageLimits() {
		f := fmt.Sprintf("%shugepage_limits[%d]", field, i)
		if h == nil {
			return nil, invalid(f, "<nil>", "nil hugepage limit")
		}
		if h.GetPageSize() == "" {
			return nil, invalid(f+".page_size", "", "empty page size")
		}
		p.hugepages.add = append(p.hugepages.add, rspec.LinuxHugepageLimit{Pagesize: h.GetPageSize(), Limit: h.GetLimit()})
	}

	// Unified keys are cgroup v2 file names, set as given: NRI defines no
	// removal marker for them.
	for _, k := range slices.Sorted(maps.Keys(r.GetUnified())) {
		if k == "" || strings.Contains(k, "/") {
			return nil, invalid(field+"unified", k, "not a cgroup file name")
		}
		p.unified = append(p.unified, entry[string]{key: k, val: r.GetUnified()[k]})
	}

	if pids := r.GetPids(); pids != nil {
		p.pidsSet = true
		if pids.GetLimit() >= 0 {
			p.pids = ptr(pids.GetLimit())
		}
	}

	for i, d := range r.GetDevices() {
		f := fmt.Sprintf("%sdevices[%d]", field, i)
		if d == nil {
			return nil, invalid(f, "<nil>", "nil device rule")
		}
		switch d.GetType() {
		case "", "a", "b", "c":
		default:
			return nil, invalid(f+".type", d.GetType(), `unknown device rule type (want "a", "b" or "c")`)
		}
		if strings.Trim(d.GetAccess(), "rwm") != "" {
			return nil, invalid(f+".access", d.GetAccess(), `access must consist of "r", "w" and "m"`)
		}
		p.rules = append(p.rules, rspec.LinuxDeviceCgroup{
			Allow:  d.GetAllow(),
			Type:   d.GetType(),
			Major:  optInt64(d.GetMajor()),
			Minor:  optInt64(d.GetMinor()),
			Access: d.GetAccess(),
		})
	}

	var err error
	if c := r.GetBlockioClass(); c != nil {
		if p.blockIO, err = o.resolveBlockIO(field+"blockio_class", c.GetValue()); err != nil {
			return nil, err
		}
		p.blockSet = true
	}
	if c := r.GetRdtClass(); c != nil {
		if p.rdt, err = o.resolveRDT(field+"rdt_class", c.GetValue()); err != nil {
			return nil, err
		}
		p.rdtSet = true
	}
	return p, nil
}

func hugepageKey(h rspec.LinuxHugepageLimit) string { return h.Pagesize }

// apply applies the plan: present memory and CPU settings are set,
// hugepage limits replace the limit of the same page size, unified
// entries are set, the pids limit is set (a negative limit means
// unlimited, i.e. nil), device cgroup rules are appended, and a present
// block I/O or RDT class replaces Linux.Resources.BlockIO or
// Linux.IntelRdt (the empty class clears them).
func (p *resourcePlan) apply(spec *rspec.Spec) {
	if p == nil {
		return
	}
	if m := p.memory; m != (rspec.LinuxMemory{}) {
		res := ensureResources(spec)
		if res.Memory == nil {
			res.Memory = &rspec.LinuxMemory{}
		}
		setIf(&res.Memory.Limit, m.Limit)
		setIf(&res.Memory.Reservation, m.Reservation)
		setIf(&res.Memory.Swap, m.Swap)
		setIf(&res.Memory.Kernel, m.Kernel) //nolint:staticcheck // NRI still carries it.
		setIf(&res.Memory.KernelTCP, m.KernelTCP)
		setIf(&res.Memory.Swappiness, m.Swappiness)
		setIf(&res.Memory.DisableOOMKiller, m.DisableOOMKiller)
		setIf(&res.Memory.UseHierarchy, m.UseHierarchy)
	}
	if c := p.cpu; c != (rspec.LinuxCPU{}) {
		res := ensureResources(spec)
		if res.CPU == nil {
			res.CPU = &rspec.LinuxCPU{}
		}
		setIf(&res.CPU.Shares, c.Shares)
		setIf(&res.CPU.Quota, c.Quota)
		setIf(&res.CPU.Period, c.Period)
		setIf(&res.CPU.RealtimeRuntime, c.RealtimeRuntime)
		setIf(&res.CPU.RealtimePeriod, c.RealtimePeriod)
		if c.Cpus != "" {
			res.CPU.Cpus = c.Cpus
		}
		if c.Mems != "" {
			res.CPU.Mems = c.Mems
		}
	}
	if !p.hugepages.empty() {
		res := ensureResources(spec)
		res.HugepageLimits, _ = p.hugepages.apply(res.HugepageLimits, hugepageKey)
	}
	if len(p.unified) > 0 {
		res := ensureResources(spec)
		res.Unified = mapEdit[string]{set: p.unified}.apply(res.Unified)
	}
	if p.pidsSet {
		ensureResources(spec).Pids = &rspec.LinuxPids{Limit: p.pids}
	}
	if len(p.rules) > 0 {
		res := ensureResources(spec)
		res.Devices = append(res.Devices, p.rules...)
	}
	if p.blockSet && (p.blockIO != nil || (spec.Linux != nil && spec.Linux.Resources != nil)) {
		ensureResources(spec).BlockIO = p.blockIO
	}
	if p.rdtSet && (p.rdt != nil || spec.Linux != nil) {
		ensureLinux(spec).IntelRdt = p.rdt
	}
}

// setIf sets *dst to a copy of *v if v is not nil.
func setIf[T any](dst **T, v *T) {
	if v != nil {
		*dst = ptr(*v)
	}
}

func optInt64(v *api.OptionalInt64) *int64 {
	if v == nil {
		return nil
	}
	return ptr(v.GetValue())
}

func optUint64(v *api.OptionalUInt64) *uint64 {
	if v == nil {
		return nil
	}
	return ptr(v.GetValue())
}

func optBool(v *api.OptionalBool) *bool {
	if v == nil {
		return nil
	}
	return ptr(v.GetValue())
}
