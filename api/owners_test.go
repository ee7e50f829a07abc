package api_test

import (
	"maps"
	"reflect"
	"testing"

	"github.com/nrinet/nrinet/api"
)

// ownerLookups lists every named owner lookup with the field it reads, as
// containerd/nri's owners_generated.go pairs them; compound ones take an
// entry key.
var ownerLookups = []struct {
	method   string
	field    api.Field
	compound bool
}{
	{"AnnotationOwner", api.Field_Annotations, true},
	{"MountOwner", api.Field_Mounts, true},
	{"DeviceOwner", api.Field_Devices, true},
	{"CdiDeviceOwner", api.Field_CdiDevices, true},
	{"EnvOwner", api.Field_Env, true},
	{"HugepageLimitOwner", api.Field_HugepageLimits, true},
	{"CgroupsUnifiedOwner", api.Field_CgroupsUnified, true},
	{"RlimitOwner", api.Field_Rlimits, true},
	{"NamespaceOwner", api.Field_Namespace, true},
	{"SysctlOwner", api.Field_Sysctl, true},
	{"LinuxNetDeviceOwner", api.Field_LinuxNetDevices, true},
	{"HooksOwner", api.Field_OciHooks, false},
	{"ArgsOwner", api.Field_Args, false},
	{"MemLimitOwner", api.Field_MemLimit, false},
	{"MemReservationOwner", api.Field_MemReservation, false},
	{"MemSwapLimitOwner", api.Field_MemSwapLimit, false},
	{"MemKernelLimitOwner", api.Field_MemKernelLimit, false},
	{"MemTCPLimitOwner", api.Field_MemTCPLimit, false},
	{"MemSwappinessOwner", api.Field_MemSwappiness, false},
	{"MemDisableOomKillerOwner", api.Field_MemDisableOomKiller, false},
	{"MemUseHierarchyOwner", api.Field_MemUseHierarchy, false},
	{"CPUSharesOwner", api.Field_CPUShares, false},
	{"CPUQuotaOwner", api.Field_CPUQuota, false},
	{"CPUPeriodOwner", api.Field_CPUPeriod, false},
	{"CPURealtimeRuntimeOwner", api.Field_CPURealtimeRuntime, false},
	{"CPURealtimePeriodOwner", api.Field_CPURealtimePeriod, false},
	{"CPUSetCPUsOwner", api.Field_CPUSetCPUs, false},
	{"CPUSetMemsOwner", api.Field_CPUSetMems, false},
	{"PidsLimitOwner", api.Field_PidsLimit, false},
	{"BlockioClassOwner", api.Field_BlockioClass, false},
	{"RdtClassOwner", api.Field_RdtClass, false},
	{"CgroupsPathOwner", api.Field_CgroupsPath, false},
	{"OomScoreAdjOwner", api.Field_OomScoreAdj, false},
	{"IOPriorityOwner", api.Field_IoPriority, false},
	{"SeccompPolicyOwner", api.Field_SeccompPolicy, false},
	{"LinuxSchedulerOwner", api.Field_LinuxSched, false},
	{"RdtClosIDOwner", api.Field_RdtClosID, false},
	{"RdtSchemataOwner", api.Field_RdtSchemata, false},
	{"RdtEnableMonitoringOwner", api.Field_RdtEnableMonitoring, false},
	{"MemoryPolicyOwner", api.Field_MemoryPolicy, false},
}

// call invokes the named lookup on recv with args and returns its results.
func call(t *testing.T, recv any, method string, args ...string) (string, bool) {
	t.Helper()
	m := reflect.ValueOf(recv).MethodByName(method)
	if !m.IsValid() {
		t.Fatalf("%T has no method %s", recv, method)
	}
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		in[i] = reflect.ValueOf(a)
	}
	out := m.Call(in)
	return out[0].String(), out[1].Bool()
}

// TestNamedOwnerLookups checks that each named lookup reads its own field,
// and only that one, on OwningPlugins and FieldOwners alike.
func TestNamedOwnerLookups(t *testing.T) {
	for _, tc := range ownerLookups {
		t.Run(tc.method, func(t *testing.T) {
			// Every field owned, by a plugin named after the field; the
			// lookup must find the one of its own field.
			fo := &api.FieldOwners{Simple: map[int32]string{}, Compound: map[int32]*api.CompoundFieldOwners{}}
			for _, other := range ownerLookups {
				if other.compound {
					fo.Compound[int32(other.field)] = &api.CompoundFieldOwners{Owners: map[string]string{"k": other.field.String()}}
				} else {
					fo.Simple[int32(other.field)] = other.field.String()
				}
			}
			op := &api.OwningPlugins{Owners: map[string]*api.FieldOwners{"c1": fo}}
			want := tc.field.String()

			type lookup struct {
				name  string
				recv  any
				args  []string
				owner string
				ok    bool
			}
			var lookups []lookup
			if tc.compound {
				lookups = []lookup{
					{"owning", op, []string{"c1", "k"}, want, true},
					{"owning/other entry", op, []string{"c1", "x"}, "", false},
					{"owning/other container", op, []string{"c2", "k"}, "", false},
					{"owning/nil", (*api.OwningPlugins)(nil), []string{"c1", "k"}, "", false},
					{"field", fo, []string{"k"}, want, true},
					{"field/other entry", fo, []string{"x"}, "", false},
					{"field/nil", (*api.FieldOwners)(nil), []string{"k"}, "", false},
					{"field/empty", &api.FieldOwners{}, []string{"k"}, "", false},
				}
			} else {
				lookups = []lookup{
					{"owning", op, []string{"c1"}, want, true},
					{"owning/other container", op, []string{"c2"}, "", false},
					{"owning/nil", (*api.OwningPlugins)(nil), []string{"c1"}, "", false},
					{"owning/empty", &api.OwningPlugins{}, []string{"c1"}, "", false},
					{"field", fo, nil, want, true},
					{"field/nil", (*api.FieldOwners)(nil), nil, "", false},
					{"field/empty", &api.FieldOwners{}, nil, "", false},
				}
			}
			for _, l := range lookups {
				owner, ok := call(t, l.recv, tc.method, l.args...)
				if owner != l.owner || ok != l.ok {
					t.Errorf("%s: got (%q, %v), want (%q, %v)", l.name, owner, ok, l.owner, l.ok)
				}
			}
		})
	}
}

func TestGenericOwnerLookups(t *testing.T) {
	fo := &api.FieldOwners{
		Simple: map[int32]string{
			int32(api.Field_MemLimit):  "10-mem",
			int32(api.Field_OciHooks):  "10-a,20-b",
			int32(api.Field_CPUShares): "-30-cpu",
		},
		Compound: map[int32]*api.CompoundFieldOwners{
			int32(api.Field_Env):       {Owners: map[string]string{"FOO": "10-env", "BAR": "-20-env"}},
			int32(api.Field_Namespace): {Owners: map[string]string{"network": "10-net"}},
			int32(api.Field_Sysctl):    {},
		},
	}
	op := &api.OwningPlugins{Owners: map[string]*api.FieldOwners{"c1": fo, "c2": nil}}

	simple := []struct {
		name  string
		id    string
		field api.Field
		owner string
		ok    bool
	}{
		{"set", "c1", api.Field_MemLimit, "10-mem", true},
		{"hooks accumulate", "c1", api.Field_OciHooks, "10-a,20-b", true},
		{"removed", "c1", api.Field_CPUShares, "-30-cpu", true},
		{"unowned field", "c1", api.Field_CPUQuota, "", false},
		{"compound field read as simple", "c1", api.Field_Env, "", false},
		{"nil FieldOwners", "c2", api.Field_MemLimit, "", false},
		{"unknown container", "c3", api.Field_MemLimit, "", false},
	}
	for _, tc := range simple {
		if owner, ok := op.SimpleOwner(tc.id, tc.field); owner != tc.owner || ok != tc.ok {
			t.Errorf("OwningPlugins.SimpleOwner %s: got (%q, %v), want (%q, %v)", tc.name, owner, ok, tc.owner, tc.ok)
		}
		if owner, ok := op.GetOwners()[tc.id].SimpleOwner(tc.field); owner != tc.owner || ok != tc.ok {
			t.Errorf("FieldOwners.SimpleOwner %s: got (%q, %v), want (%q, %v)", tc.name, owner, ok, tc.owner, tc.ok)
		}
	}

	compound := []struct {
		name  string
		id    string
		field api.Field
		key   string
		owner string
		ok    bool
	}{
		{"set", "c1", api.Field_Env, "FOO", "10-env", true},
		{"removed", "c1", api.Field_Env, "BAR", "-20-env", true},
		{"unowned entry", "c1", api.Field_Env, "BAZ", "", false},
		{"unowned field", "c1", api.Field_Mounts, "/m", "", false},
		{"nil owners map", "c1", api.Field_Sysctl, "a.b", "", false},
		{"nil FieldOwners", "c2", api.Field_Env, "FOO", "", false},
		{"unknown container", "c3", api.Field_Env, "FOO", "", false},
	}
	for _, tc := range compound {
		if owner, ok := op.CompoundOwner(tc.id, tc.field, tc.key); owner != tc.owner || ok != tc.ok {
			t.Errorf("OwningPlugins.CompoundOwner %s: got (%q, %v), want (%q, %v)", tc.name, owner, ok, tc.owner, tc.ok)
		}
		if owner, ok := op.GetOwners()[tc.id].CompoundOwner(tc.field, tc.key); owner != tc.owner || ok != tc.ok {
			t.Errorf("FieldOwners.CompoundOwner %s: got (%q, %v), want (%q, %v)", tc.name, owner, ok, tc.owner, tc.ok)
		}
	}

	maps_ := []struct {
		name   string
		id     string
		field  api.Field
		owners map[string]string
		ok     bool
	}{
		{"set", "c1", api.Field_Env, map[string]string{"FOO": "10-env", "BAR": "-20-env"}, true},
		{"present but empty", "c1", api.Field_Sysctl, nil, true},
		{"unowned field", "c1", api.Field_Mounts, nil, false},
		{"nil FieldOwners", "c2", api.Field_Env, nil, false},
		{"unknown container", "c3", api.Field_Env, nil, false},
	}
	for _, tc := range maps_ {
		if owners, ok := op.CompoundOwners(tc.id, tc.field); !maps.Equal(owners, tc.owners) || ok != tc.ok {
			t.Errorf("OwningPlugins.CompoundOwners %s: got (%v, %v), want (%v, %v)", tc.name, owners, ok, tc.owners, tc.ok)
		}
		if owners, ok := op.GetOwners()[tc.id].CompoundOwners(tc.field); !maps.Equal(owners, tc.owners) || ok != tc.ok {
			t.Errorf("FieldOwners.CompoundOwners %s: got (%v, %v), want (%v, %v)", tc.name, owners, ok, tc.owners, tc.ok)
		}
	}

	// The namespace wrappers.
	want := map[string]string{"network": "10-net"}
	for name, got := range map[string]func() (map[string]string, bool){
		"OwningPlugins": func() (map[string]string, bool) { return op.NamespaceOwners("c1") },
		"FieldOwners":   fo.NamespaceOwners,
	} {
		if owners, ok := got(); !ok || !maps.Equal(owners, want) {
			t.Errorf("%s.NamespaceOwners: got (%v, %v), want (%v, true)", name, owners, ok, want)
		}
	}
	if owners, ok := (*api.OwningPlugins)(nil).NamespaceOwners("c1"); owners != nil || ok {
		t.Errorf("nil OwningPlugins.NamespaceOwners: got (%v, %v)", owners, ok)
	}
	if owners, ok := (*api.FieldOwners)(nil).NamespaceOwners(); owners != nil || ok {
		t.Errorf("nil FieldOwners.NamespaceOwners: got (%v, %v)", owners, ok)
	}
}

func TestFieldKey(t *testing.T) {
	for _, tc := range []struct {
		field api.Field
		key   int32
	}{
		{api.Field_None, 0},
		{api.Field_Annotations, 1},
		{api.Field_OciHooks, 3},
		{api.Field_MemoryPolicy, 40},
	} {
		if got := tc.field.Key(); got != tc.key {
			t.Errorf("%v.Key() = %d, want %d", tc.field, got, tc.key)
		}
	}
}

// TestOwnerLookupsCoverFields checks that every Field has exactly one named
// lookup, so that a field added to the schema is not forgotten here.
func TestOwnerLookupsCoverFields(t *testing.T) {
	seen := map[api.Field]int{}
	for _, l := range ownerLookups {
		seen[l.field]++
	}
	for v := range api.Field_name {
		f := api.Field(v)
		if want := map[bool]int{true: 0, false: 1}[f == api.Field_None]; seen[f] != want {
			t.Errorf("%v has %d named lookups, want %d", f, seen[f], want)
		}
	}
}

// TestOwnerLookupsNormalize: entries are owned under cleaned paths and
// canonical namespace types, and looked up the same way.
func TestOwnerLookupsNormalize(t *testing.T) {
	o := &api.OwningPlugins{Owners: map[string]*api.FieldOwners{"c": {Compound: map[int32]*api.CompoundFieldOwners{
		int32(api.Field_Mounts):    {Owners: map[string]string{"/data": "10-m"}},
		int32(api.Field_Devices):   {Owners: map[string]string{"/dev/fuse": "10-d"}},
		int32(api.Field_Namespace): {Owners: map[string]string{"network": "10-n"}},
	}}}}
	for _, tc := range []struct {
		got  func() (string, bool)
		want string
	}{
		{func() (string, bool) { return o.MountOwner("c", "/data/") }, "10-m"},
		{func() (string, bool) { return o.DeviceOwner("c", "/dev//fuse") }, "10-d"},
		{func() (string, bool) { return o.NamespaceOwner("c", "net") }, "10-n"},
		{func() (string, bool) { return o.NamespaceOwner("c", "network") }, "10-n"},
	} {
		if got, ok := tc.got(); !ok || got != tc.want {
			t.Errorf("lookup = %q, %v; want %q", got, ok, tc.want)
		}
	}
}
