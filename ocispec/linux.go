package ocispec

import (
	"fmt"
	"path"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
)

// namespaceType maps the namespace type names NRI plugins use to the OCI
// type: the OCI names themselves plus the short names of /proc/PID/ns
// ("net", "mnt").
func namespaceType(t string) (rspec.LinuxNamespaceType, bool) {
	switch t = api.NamespaceType(t); t {
	case "pid", "network", "mount", "ipc", "uts", "user", "cgroup", "time":
		return rspec.LinuxNamespaceType(t), true
	}
	return "", false
}

// prepareNamespaces validates the namespaces of an adjustment. A type
// marked with "-" removes that namespace; otherwise the namespace is
// added or, if the spec has one of its type, replaced. A path, if given,
// must be absolute.
func prepareNamespaces(nss []*api.LinuxNamespace) (listEdit[rspec.LinuxNamespace], error) {
	var e listEdit[rspec.LinuxNamespace]
	for i, ns := range nss {
		field := fmt.Sprintf("linux.namespaces[%d]", i)
		if ns == nil {
			return e, invalid(field, "<nil>", "nil namespace")
		}
		name, removed := unmark(ns.GetType())
		t, ok := namespaceType(name)
		if !ok {
			return e, invalid(field+".type", ns.GetType(), "unknown namespace type")
		}
		if removed {
			e.remove = append(e.remove, string(t))
			continue
		}
		if p := ns.GetPath(); p != "" && !path.IsAbs(p) {
			return e, invalid(field+".path", p, "not an absolute path")
		}
		e.add = append(e.add, rspec.LinuxNamespace{Type: t, Path: ns.GetPath()})
	}
	return e, nil
}

func namespaceKey(ns rspec.LinuxNamespace) string { return string(ns.Type) }

func applyNamespaces(spec *rspec.Spec, e listEdit[rspec.LinuxNamespace]) {
	if e.empty() || (len(e.add) == 0 && spec.Linux == nil) {
		return
	}
	l := ensureLinux(spec)
	l.Namespaces, _ = e.apply(l.Namespaces, namespaceKey)
}

// prepareSeccomp converts a present seccomp policy, which replaces the
// spec's policy as a whole. The default action and each syscall rule's
// names and action must be set; action, architecture, flag and operator
// names are passed through unchecked, for the runtime to judge.
func prepareSeccomp(s *api.LinuxSeccomp) (*rspec.LinuxSeccomp, error) {
	const field = "linux.seccomp_policy"
	if s.GetDefaultAction() == "" {
		return nil, invalid(field+".default_action", "", "empty action")
	}
	o := &rspec.LinuxSeccomp{
		DefaultAction:    rspec.LinuxSeccompAction(s.GetDefaultAction()),
		ListenerPath:     s.GetListenerPath(),
		ListenerMetadata: s.GetListenerMetadata(),
	}
	if e := s.GetDefaultErrno(); e != nil {
		o.DefaultErrnoRet = ptr(uint(e.GetValue()))
	}
	for _, a := range s.GetArchitectures() {
		o.Architectures = append(o.Architectures, rspec.Arch(a))
	}
	for _, f := range s.GetFlags() {
		o.Flags = append(o.Flags, rspec.LinuxSeccompFlag(f))
	}
	for i, sc := range s.GetSyscalls() {
		f := fmt.Sprintf("%s.syscalls[%d]", field, i)
		if sc == nil {
			return nil, invalid(f, "<nil>", "nil syscall rule")
		}
		if len(sc.GetNames()) == 0 {
			return nil, invalid(f+".names", sc.GetNames(), "no syscall names")
		}
		if sc.GetAction() == "" {
			return nil, invalid(f+".action", "", "empty action")
		}
		r := rspec.LinuxSyscall{
			Names:  slices.Clone(sc.GetNames()),
			Action: rspec.LinuxSeccompAction(sc.GetAction()),
		}
		if e := sc.GetErrnoRet(); e != nil {
			r.ErrnoRet = ptr(uint(e.GetValue()))
		}
		for j, a := range sc.GetArgs() {
			if a == nil {
				return nil, invalid(fmt.Sprintf("%s.args[%d]", f, j), "<nil>", "nil argument rule")
			}
			r.Args = append(r.Args, rspec.LinuxSeccompArg{
				Index:    uint(a.GetIndex()),
				Value:    a.GetValue(),
				ValueTwo: a.GetValueTwo(),
				Op:       rspec.LinuxSeccompOperator(a.GetOp()),
			})
		}
		o.Syscalls = append(o.Syscalls, r)
	}
	return o, nil
}

// prepareMemoryPolicy converts a present memory policy, which replaces the
// spec's policy as a whole. Mode and flags must be known enum values.
func prepareMemoryPolicy(m *api.LinuxMemoryPolicy) (*rspec.LinuxMemoryPolicy, error) {
	const field = "linux.memory_policy"
	mode, err := enumName(field+".mode", m.GetMode(), api.MpolMode_name, "memory policy mode")
	if err != nil {
		return nil, err
	}
	flags, err := enumNames[rspec.MemoryPolicyFlagType](field+".flags", m.GetFlags(), api.MpolFlag_name, "memory policy flag")
	if err != nil {
		return nil, err
	}
	return &rspec.LinuxMemoryPolicy{Mode: rspec.MemoryPolicyModeType(mode), Nodes: m.GetNodes(), Flags: flags}, nil
}

// rdtPlan is a present LinuxRdt adjustment.
type rdtPlan struct {
	remove     bool
	closID     *string
	schemata   []string
	setSchema  bool
	monitoring *bool
}

func prepareRDT(r *api.LinuxRdt) *rdtPlan {
	if r == nil {
		return nil
	}
	p := &rdtPlan{remove: r.GetRemove()}
	if v := r.GetClosId(); v != nil {
		p.closID = ptr(v.GetValue())
	}
	if v := r.GetSchemata(); v != nil {
		p.schemata, p.setSchema = slices.Clone(v.GetValue()), true
	}
	if v := r.GetEnableMonitoring(); v != nil {
		p.monitoring = ptr(v.GetValue())
	}
	return p
}

// apply applies the RDT adjustment to spec.Linux.IntelRdt: remove clears
// it first, then every present field is set (creating IntelRdt if
// needed).
func (p *rdtPlan) apply(spec *rspec.Spec) {
	if p == nil {
		return
	}
	if p.remove && spec.Linux != nil {
		spec.Linux.IntelRdt = nil
	}
	if p.closID == nil && !p.setSchema && p.monitoring == nil {
		return
	}
	l := ensureLinux(spec)
	if l.IntelRdt == nil {
		l.IntelRdt = &rspec.LinuxIntelRdt{}
	}
	if p.closID != nil {
		l.IntelRdt.ClosID = *p.closID
	}
	if p.setSchema {
		l.IntelRdt.Schemata = p.schemata
	}
	if p.monitoring != nil {
		l.IntelRdt.EnableMonitoring = *p.monitoring
	}
}
