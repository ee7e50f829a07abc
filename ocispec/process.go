package ocispec

import (
	"fmt"
	"path"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
)

// hookPlan holds the converted hooks to append, by phase.
type hookPlan struct {
	prestart, createRuntime, createContainer, startContainer, poststart, poststop []rspec.Hook
}

func prepareHooks(h *api.Hooks) (hookPlan, error) {
	var (
		p   hookPlan
		err error
	)
	if h == nil {
		return p, nil
	}
	phases := []struct {
		name string
		in   []*api.Hook
		out  *[]rspec.Hook
	}{
		{"prestart", h.GetPrestart(), &p.prestart},
		{"create_runtime", h.GetCreateRuntime(), &p.createRuntime},
		{"create_container", h.GetCreateContainer(), &p.createContainer},
		{"start_container", h.GetStartContainer(), &p.startContainer},
		{"poststart", h.GetPoststart(), &p.poststart},
		{"poststop", h.GetPoststop(), &p.poststop},
	}
	for _, ph := range phases {
		if *ph.out, err = convertHooks("hooks."+ph.name, ph.in); err != nil {
			return p, err
		}
	}
	return p, nil
}

// convertHooks converts one phase's hooks. Hook paths must be absolute.
func convertHooks(field string, hooks []*api.Hook) ([]rspec.Hook, error) {
	var out []rspec.Hook
	for i, h := range hooks {
		f := fmt.Sprintf("%s[%d]", field, i)
		if h == nil {
			return nil, invalid(f, "<nil>", "nil hook")
		}
		if !path.IsAbs(h.GetPath()) {
			return nil, invalid(f+".path", h.GetPath(), "not an absolute path")
		}
		o := rspec.Hook{
			Path: h.GetPath(),
			Args: slices.Clone(h.GetArgs()),
			Env:  slices.Clone(h.GetEnv()),
		}
		if t := h.GetTimeout(); t != nil {
			if t.GetValue() <= 0 {
				return nil, invalid(f+".timeout", t.GetValue(), "must be positive")
			}
			o.Timeout = ptr(int(t.GetValue()))
		}
		out = append(out, o)
	}
	return out, nil
}

// apply appends the hooks to spec.Hooks, phase by phase, after any hooks
// already there.
func (p hookPlan) apply(spec *rspec.Spec) {
	if len(p.prestart)+len(p.createRuntime)+len(p.createContainer)+
		len(p.startContainer)+len(p.poststart)+len(p.poststop) == 0 {
		return
	}
	if spec.Hooks == nil {
		spec.Hooks = &rspec.Hooks{}
	}
	h := spec.Hooks
	h.Prestart = append(h.Prestart, p.prestart...) //nolint:staticcheck // NRI still carries prestart hooks.
	h.CreateRuntime = append(h.CreateRuntime, p.createRuntime...)
	h.CreateContainer = append(h.CreateContainer, p.createContainer...)
	h.StartContainer = append(h.StartContainer, p.startContainer...)
	h.Poststart = append(h.Poststart, p.poststart...)
	h.Poststop = append(h.Poststop, p.poststop...)
}

// isRlimitType reports whether t is a resource limit setrlimit(2) knows,
// as OCI names it.
func isRlimitType(t string) bool {
	switch t {
	case "RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE",
		"RLIMIT_LOCKS", "RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE", "RLIMIT_NICE",
		"RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_RSS", "RLIMIT_RTPRIO",
		"RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK":
		return true
	}
	return false
}

// prepareRlimits validates rlimits: the type must be a known RLIMIT_*
// name and soft must not exceed hard. A limit replaces the limit of the
// same type.
func prepareRlimits(limits []*api.POSIXRlimit) (listEdit[rspec.POSIXRlimit], error) {
	var e listEdit[rspec.POSIXRlimit]
	for i, l := range limits {
		field := fmt.Sprintf("rlimits[%d]", i)
		if l == nil {
			return e, invalid(field, "<nil>", "nil rlimit")
		}
		if !isRlimitType(l.GetType()) {
			return e, invalid(field+".type", l.GetType(), "unknown rlimit type")
		}
		if l.GetSoft() > l.GetHard() {
			return e, invalid(field+".soft", l.GetSoft(), "exceeds hard limit %d", l.GetHard())
		}
		e.add = append(e.add, rspec.POSIXRlimit{Type: l.GetType(), Hard: l.GetHard(), Soft: l.GetSoft()})
	}
	return e, nil
}

func rlimitKey(l rspec.POSIXRlimit) string { return l.Type }

func applyRlimits(spec *rspec.Spec, e listEdit[rspec.POSIXRlimit]) {
	if e.empty() {
		return
	}
	p := ensureProcess(spec)
	p.Rlimits, _ = e.apply(p.Rlimits, rlimitKey)
}

// prepareOOMScoreAdj validates a present OOM score adjustment, which
// must lie in [-1000, 1000].
func prepareOOMScoreAdj(v *api.OptionalInt) (*int, error) {
	if v == nil {
		return nil, nil
	}
	if v.GetValue() < -1000 || v.GetValue() > 1000 {
		return nil, invalid("linux.oom_score_adj", v.GetValue(), "out of range [-1000, 1000]")
	}
	return ptr(int(v.GetValue())), nil
}

// prepareIOPriority converts a present I/O priority. Class
// IOPRIO_CLASS_NONE yields a nil priority, which clears the spec's one
// (as upstream NRI does); other classes need a priority in [0, 7].
func prepareIOPriority(p *api.LinuxIOPriority) (*rspec.LinuxIOPriority, error) {
	const field = "linux.io_priority"
	name, err := enumName(field+".class", p.GetClass(), api.IOPrioClass_name, "I/O priority class")
	if err != nil {
		return nil, err
	}
	if p.GetClass() == api.IOPrioClass_IOPRIO_CLASS_NONE {
		return nil, nil
	}
	if p.GetPriority() < 0 || p.GetPriority() > 7 {
		return nil, invalid(field+".priority", p.GetPriority(), "out of range [0, 7]")
	}
	return &rspec.LinuxIOPriority{Class: rspec.IOPriorityClass(name), Priority: int(p.GetPriority())}, nil
}

// prepareScheduler converts a present scheduler. Policy SCHED_NONE yields
// nil, which clears the spec's scheduler (as upstream NRI does).
func prepareScheduler(s *api.LinuxScheduler) (*rspec.Scheduler, error) {
	const field = "linux.scheduler"
	name, err := enumName(field+".policy", s.GetPolicy(), api.LinuxSchedulerPolicy_name, "scheduling policy")
	if err != nil {
		return nil, err
	}
	if s.GetPolicy() == api.LinuxSchedulerPolicy_SCHED_NONE {
		return nil, nil
	}
	o := &rspec.Scheduler{
		Policy:   rspec.LinuxSchedulerPolicy(name),
		Nice:     s.GetNice(),
		Priority: s.GetPriority(),
		Runtime:  s.GetRuntime(),
		Deadline: s.GetDeadline(),
		Period:   s.GetPeriod(),
	}
	if o.Flags, err = enumNames[rspec.LinuxSchedulerFlag](field+".flags", s.GetFlags(), api.LinuxSchedulerFlag_name, "scheduling flag"); err != nil {
		return nil, err
	}
	return o, nil
}
