package ocispec_test

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
)

// p returns a pointer to v.
func p[T any](v T) *T { return &v }

// Optional wrapper constructors.
func oInt(v int64) *api.OptionalInt        { return &api.OptionalInt{Value: v} }
func oInt64(v int64) *api.OptionalInt64    { return &api.OptionalInt64{Value: v} }
func oUint64(v uint64) *api.OptionalUInt64 { return &api.OptionalUInt64{Value: v} }
func oUint32(v uint32) *api.OptionalUInt32 { return &api.OptionalUInt32{Value: v} }
func oBool(v bool) *api.OptionalBool       { return &api.OptionalBool{Value: v} }
func oString(v string) *api.OptionalString { return &api.OptionalString{Value: v} }

// baseSpec returns a fresh, fairly complete spec, as a runtime would
// generate before applying NRI adjustments.
func baseSpec() *rspec.Spec {
	return &rspec.Spec{
		Version:     rspec.Version,
		Annotations: map[string]string{"a": "1", "b": "2"},
		Process: &rspec.Process{
			Args:    []string{"/bin/sh", "-c", "sleep inf"},
			Env:     []string{"PATH=/bin", "A=1", "B=2", "C"},
			Rlimits: []rspec.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}},
		},
		Mounts: []rspec.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs"},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm"},
			{Destination: "/data", Type: "bind", Source: "/old", Options: []string{"rbind"}},
		},
		Linux: &rspec.Linux{
			Namespaces: []rspec.LinuxNamespace{
				{Type: rspec.PIDNamespace},
				{Type: rspec.NetworkNamespace, Path: "/var/run/netns/pod"},
				{Type: rspec.MountNamespace},
			},
			Devices: []rspec.LinuxDevice{
				{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229},
			},
			Resources: &rspec.LinuxResources{
				Devices: []rspec.LinuxDeviceCgroup{
					{Allow: false, Access: "rwm"},
					{Allow: true, Type: "c", Major: p(int64(10)), Minor: p(int64(229)), Access: "rwm"},
				},
				Memory: &rspec.LinuxMemory{Limit: p(int64(1 << 30)), Swap: p(int64(1 << 30))},
				CPU:    &rspec.LinuxCPU{Shares: p(uint64(1024)), Cpus: "0-3"},
			},
			Sysctl:      map[string]string{"net.ipv4.ip_forward": "1"},
			CgroupsPath: "/kubepods/pod1/ctr1",
		},
	}
}

// edit returns a fresh baseSpec modified by fn.
func edit(fn func(s *rspec.Spec)) *rspec.Spec {
	s := baseSpec()
	fn(s)
	return s
}

// diff compares specs, treating nil and empty slices and maps alike.
func diff(want, got *rspec.Spec) string {
	return cmp.Diff(want, got, cmpEmpty)
}

var cmpEmpty = cmp.FilterValues(func(x, y any) bool {
	return isEmpty(x) && isEmpty(y)
}, cmp.Comparer(func(_, _ any) bool { return true }))

func isEmpty(v any) bool {
	switch v := v.(type) {
	case []string:
		return len(v) == 0
	case []rspec.Mount:
		return len(v) == 0
	case []rspec.LinuxDeviceCgroup:
		return len(v) == 0
	case []rspec.LinuxDevice:
		return len(v) == 0
	case map[string]string:
		return len(v) == 0
	}
	return false
}

func mode(m os.FileMode) *os.FileMode { return &m }

// check fails t with a diff if got is not want.
func check(t *testing.T, want, got *rspec.Spec) {
	t.Helper()
	if d := diff(want, got); d != "" {
		t.Errorf("spec mismatch (-want +got):\n%s", d)
	}
}
