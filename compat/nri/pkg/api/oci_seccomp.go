package api

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// FromOCILinuxSeccomp returns the seccomp policy of an OCI spec as an NRI
// one, or nil for nil (upstream dereferences nil and panics). The
// architecture and flag lists are always present, empty if the spec has
// none, as upstream.
func FromOCILinuxSeccomp(o *rspec.LinuxSeccomp) *LinuxSeccomp {
	if o == nil {
		return nil
	}
	var errno *OptionalUInt32
	if o.DefaultErrnoRet != nil {
		errno = &OptionalUInt32{Value: uint32(*o.DefaultErrnoRet)}
	}
	arches := make([]string, len(o.Architectures))
	for i, a := range o.Architectures {
		arches[i] = string(a)
	}
	flags := make([]string, len(o.Flags))
	for i, f := range o.Flags {
		flags[i] = string(f)
	}
	return &LinuxSeccomp{
		DefaultAction:    string(o.DefaultAction),
		DefaultErrno:     errno,
		Architectures:    arches,
		Flags:            flags,
		ListenerPath:     o.ListenerPath,
		ListenerMetadata: o.ListenerMetadata,
		Syscalls:         FromOCILinuxSyscalls(o.Syscalls),
	}
}

// FromOCILinuxSyscalls returns OCI seccomp syscall rules as NRI ones (a
// non-nil list, as upstream).
func FromOCILinuxSyscalls(o []rspec.LinuxSyscall) []*LinuxSyscall {
	syscalls := make([]*LinuxSyscall, len(o))
	for i, s := range o {
		var errno *OptionalUInt32
		if s.ErrnoRet != nil {
			errno = &OptionalUInt32{Value: uint32(*s.ErrnoRet)}
		}
		syscalls[i] = &LinuxSyscall{
			Names:    DupStringSlice(s.Names),
			Action:   string(s.Action),
			ErrnoRet: errno,
			Args:     FromOCILinuxSeccompArgs(s.Args),
		}
	}
	return syscalls
}

// FromOCILinuxSeccompArgs returns OCI seccomp argument filters as NRI
// ones (a non-nil list, as upstream).
func FromOCILinuxSeccompArgs(o []rspec.LinuxSeccompArg) []*LinuxSeccompArg {
	args := make([]*LinuxSeccompArg, len(o))
	for i, a := range o {
		args[i] = &LinuxSeccompArg{Index: uint32(a.Index), Value: a.Value, ValueTwo: a.ValueTwo, Op: string(a.Op)}
	}
	return args
}

// ToOCILinuxSyscalls returns NRI seccomp syscall rules as OCI ones (a
// non-nil list, as upstream).
func ToOCILinuxSyscalls(o []*LinuxSyscall) []rspec.LinuxSyscall {
	syscalls := make([]rspec.LinuxSyscall, len(o))
	for i, s := range o {
		var errno *uint
		if s.GetErrnoRet() != nil {
			v := uint(s.ErrnoRet.Value)
			errno = &v
		}
		syscalls[i] = rspec.LinuxSyscall{
			Names:    DupStringSlice(s.GetNames()),
			Action:   rspec.LinuxSeccompAction(s.GetAction()),
			ErrnoRet: errno,
			Args:     ToOCILinuxSeccompArgs(s.GetArgs()),
		}
	}
	return syscalls
}

// ToOCILinuxSeccompArgs returns NRI seccomp argument filters as OCI ones
// (a non-nil list, as upstream).
func ToOCILinuxSeccompArgs(o []*LinuxSeccompArg) []rspec.LinuxSeccompArg {
	args := make([]rspec.LinuxSeccompArg, len(o))
	for i, a := range o {
		args[i] = rspec.LinuxSeccompArg{
			Index:    uint(a.GetIndex()),
			Value:    a.GetValue(),
			ValueTwo: a.GetValueTwo(),
			Op:       rspec.LinuxSeccompOperator(a.GetOp()),
		}
	}
	return args
}
