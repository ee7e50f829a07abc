package api

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// This file converts the process scheduling settings of an OCI spec (I/O
// priority, scheduler, memory policy). Enum values map by name; a name
// NRI does not know becomes the enum's zero value (IOPRIO_CLASS_NONE,
// SCHED_NONE, MPOL_DEFAULT, MPOL_F_STATIC_NODES for flags), as upstream.

// FromOCILinuxIOPriority returns the I/O priority of an OCI process as an
// NRI one, or nil for nil.
func FromOCILinuxIOPriority(o *rspec.LinuxIOPriority) *LinuxIOPriority {
	if o == nil {
		return nil
	}
	return &LinuxIOPriority{Class: FromOCIIOPriorityClass(o.Class), Priority: int32(o.Priority)}
}

// FromOCIIOPriorityClass returns an OCI I/O priority class as an NRI one.
func FromOCIIOPriorityClass(o rspec.IOPriorityClass) IOPrioClass {
	return IOPrioClass(IOPrioClass_value[string(o)])
}

// FromOCILinuxScheduler returns the scheduler settings of an OCI process
// as NRI ones, or nil for nil.
func FromOCILinuxScheduler(o *rspec.Scheduler) *LinuxScheduler {
	if o == nil {
		return nil
	}
	return &LinuxScheduler{
		Policy:   FromOCISchedulerPolicy(o.Policy),
		Nice:     o.Nice,
		Priority: o.Priority,
		Flags:    FromOCILinuxSchedulerFlags(o.Flags),
		Runtime:  o.Runtime,
		Deadline: o.Deadline,
		Period:   o.Period,
	}
}

// FromOCISchedulerPolicy returns an OCI scheduling policy as an NRI one.
func FromOCISchedulerPolicy(o rspec.LinuxSchedulerPolicy) LinuxSchedulerPolicy {
	return LinuxSchedulerPolicy(LinuxSchedulerPolicy_value[string(o)])
}

// FromOCILinuxSchedulerFlags returns OCI scheduler flags as NRI ones, nil
// for nil.
func FromOCILinuxSchedulerFlags(o []rspec.LinuxSchedulerFlag) []LinuxSchedulerFlag {
	if o == nil {
		return nil
	}
	flags := make([]LinuxSchedulerFlag, len(o))
	for i, f := range o {
		flags[i] = LinuxSchedulerFlag(LinuxSchedulerFlag_value[string(f)])
	}
	return flags
}

// ToOCILinuxSchedulerFlags returns NRI scheduler flags as OCI ones, nil
// for nil.
func ToOCILinuxSchedulerFlags(f []LinuxSchedulerFlag) []rspec.LinuxSchedulerFlag {
	if f == nil {
		return nil
	}
	flags := make([]rspec.LinuxSchedulerFlag, len(f))
	for i, flag := range f {
		flags[i] = rspec.LinuxSchedulerFlag(LinuxSchedulerFlag_name[int32(flag)])
	}
	return flags
}

// FromOCILinuxMemoryPolicy returns the memory policy of an OCI spec as an
// NRI one, or nil for nil.
func FromOCILinuxMemoryPolicy(o *rspec.LinuxMemoryPolicy) *LinuxMemoryPolicy {
	if o == nil {
		return nil
	}
	return &LinuxMemoryPolicy{
		Mode:  FromOCIMemoryPolicyMode(o.Mode),
		Nodes: o.Nodes,
		Flags: FromOCIMemoryPolicyFlags(o.Flags...),
	}
}

// FromOCIMemoryPolicyMode returns an OCI memory policy mode as an NRI one.
func FromOCIMemoryPolicyMode(mode rspec.MemoryPolicyModeType) MpolMode {
	return MpolMode(MpolMode_value[string(mode)])
}

// FromOCIMemoryPolicyFlags returns OCI memory policy flags as NRI ones,
// nil for none given.
func FromOCIMemoryPolicyFlags(flags ...rspec.MemoryPolicyFlagType) []MpolFlag {
	if flags == nil {
		return nil
	}
	out := make([]MpolFlag, len(flags))
	for i, f := range flags {
		out[i] = MpolFlag(MpolFlag_value[string(f)])
	}
	return out
}

// ToOCIMemoryPolicyFlags returns NRI memory policy flags as OCI ones, nil
// for none given.
func ToOCIMemoryPolicyFlags(flags ...MpolFlag) []rspec.MemoryPolicyFlagType {
	if flags == nil {
		return nil
	}
	out := make([]rspec.MemoryPolicyFlagType, len(flags))
	for i, f := range flags {
		out[i] = rspec.MemoryPolicyFlagType(MpolFlag_name[int32(f)])
	}
	return out
}
