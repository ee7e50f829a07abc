package api_test

import (
	"go/token"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/nrinet/nrinet/api"
)

// exportedOnly compares messages by their exported fields, telling nil and
// empty lists and maps apart (proto.Equal and protocmp would not).
var exportedOnly = cmp.FilterPath(func(p cmp.Path) bool {
	sf, ok := p.Last().(cmp.StructField)
	return ok && !token.IsExported(sf.Name())
}, cmp.Ignore())

// stripped lists, by full name, the messages containerd/nri's strip.go
// gives a Strip method.
var stripped = []string{
	"ContainerAdjustment", "LinuxContainerAdjustment", "ContainerUpdate",
	"LinuxContainerUpdate", "Hooks", "LinuxResources", "LinuxMemory",
	"LinuxCPU", "LinuxPids", "LinuxIOPriority", "LinuxScheduler",
	"LinuxSeccomp", "LinuxMemoryPolicy", "LinuxRdt",
}

func TestStrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any // a message with a Strip method
		want any // the expected result
	}{
		{"nil adjustment", (*api.ContainerAdjustment)(nil), (*api.ContainerAdjustment)(nil)},
		{"empty adjustment", &api.ContainerAdjustment{}, (*api.ContainerAdjustment)(nil)},
		{
			"adjustment of empties",
			&api.ContainerAdjustment{
				Annotations: map[string]string{},
				Mounts:      []*api.Mount{},
				Env:         []*api.KeyValue{},
				Hooks:       &api.Hooks{Prestart: []*api.Hook{}, Poststop: []*api.Hook{}},
				Linux: &api.LinuxContainerAdjustment{
					Devices: []*api.LinuxDevice{},
					Resources: &api.LinuxResources{
						Memory: &api.LinuxMemory{}, Cpu: &api.LinuxCPU{}, Pids: &api.LinuxPids{},
						HugepageLimits: []*api.HugepageLimit{}, Unified: map[string]string{},
					},
					IoPriority:    &api.LinuxIOPriority{},
					SeccompPolicy: &api.LinuxSeccomp{Architectures: []string{}},
					Namespaces:    []*api.LinuxNamespace{},
					Sysctl:        map[string]string{},
					NetDevices:    map[string]*api.LinuxNetDevice{},
					Scheduler:     &api.LinuxScheduler{Flags: []api.LinuxSchedulerFlag{}},
					Rdt:           &api.LinuxRdt{},
					MemoryPolicy:  &api.LinuxMemoryPolicy{Flags: []api.MpolFlag{}},
				},
				Rlimits:    []*api.POSIXRlimit{},
				CDIDevices: []*api.CDIDevice{},
				Args:       []string{},
			},
			(*api.ContainerAdjustment)(nil),
		},
		{
			"adjustment with one deep value",
			&api.ContainerAdjustment{
				Env:   []*api.KeyValue{},
				Hooks: &api.Hooks{},
				Linux: &api.LinuxContainerAdjustment{
					Resources: &api.LinuxResources{
						Memory: &api.LinuxMemory{Limit: api.Int64(0)},
						Cpu:    &api.LinuxCPU{},
					},
					Sysctl: map[string]string{},
				},
			},
			&api.ContainerAdjustment{
				Linux: &api.LinuxContainerAdjustment{
					Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: api.Int64(0)}},
				},
			},
		},
		{
			"removal markers are values",
			&api.ContainerAdjustment{Annotations: map[string]string{"-a": ""}, Args: []string{""}},
			&api.ContainerAdjustment{Annotations: map[string]string{"-a": ""}, Args: []string{""}},
		},
		{
			"empty wrapper messages count as set",
			&api.LinuxContainerAdjustment{OomScoreAdj: &api.OptionalInt{}, Resources: &api.LinuxResources{BlockioClass: &api.OptionalString{}}},
			&api.LinuxContainerAdjustment{OomScoreAdj: &api.OptionalInt{}, Resources: &api.LinuxResources{BlockioClass: &api.OptionalString{}}},
		},
		{
			"list entries are not stripped",
			&api.LinuxSeccomp{Syscalls: []*api.LinuxSyscall{{}}},
			&api.LinuxSeccomp{Syscalls: []*api.LinuxSyscall{{}}},
		},
		{"hooks", &api.Hooks{Poststart: []*api.Hook{{Path: "/x"}}, Prestart: []*api.Hook{}}, &api.Hooks{Poststart: []*api.Hook{{Path: "/x"}}}},
		{"empty hooks", &api.Hooks{CreateRuntime: []*api.Hook{}}, (*api.Hooks)(nil)},
		{"nil hooks", (*api.Hooks)(nil), (*api.Hooks)(nil)},
		{"pids zero", &api.LinuxPids{}, (*api.LinuxPids)(nil)},
		{"pids unlimited", &api.LinuxPids{Limit: api.UnlimitedPidsLimit}, &api.LinuxPids{Limit: -1}},
		{"cpu set", &api.LinuxCPU{Cpus: "0-3"}, &api.LinuxCPU{Cpus: "0-3"}},
		{"memory empty", &api.LinuxMemory{}, (*api.LinuxMemory)(nil)},
		{"ioprio class", &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE}, &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE}},
		{"ioprio empty", &api.LinuxIOPriority{}, (*api.LinuxIOPriority)(nil)},
		{"scheduler nice", &api.LinuxScheduler{Nice: -5, Flags: []api.LinuxSchedulerFlag{}}, &api.LinuxScheduler{Nice: -5}},
		{"memory policy nodes", &api.LinuxMemoryPolicy{Nodes: "0"}, &api.LinuxMemoryPolicy{Nodes: "0"}},
		{"memory policy empty", &api.LinuxMemoryPolicy{Flags: []api.MpolFlag{}}, (*api.LinuxMemoryPolicy)(nil)},
		{"rdt remove", &api.LinuxRdt{Remove: true}, &api.LinuxRdt{Remove: true}},
		{"rdt empty schemata", &api.LinuxRdt{Schemata: &api.OptionalRepeatedString{}}, &api.LinuxRdt{Schemata: &api.OptionalRepeatedString{}}},
		{"rdt empty", &api.LinuxRdt{}, (*api.LinuxRdt)(nil)},
		{"seccomp empty", &api.LinuxSeccomp{Flags: []string{}, Syscalls: []*api.LinuxSyscall{}}, (*api.LinuxSeccomp)(nil)},
		{"update id only", &api.ContainerUpdate{ContainerId: "c1", Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{}}}, &api.ContainerUpdate{ContainerId: "c1"}},
		{"update ignore failure", &api.ContainerUpdate{IgnoreFailure: true}, &api.ContainerUpdate{IgnoreFailure: true}},
		{"update empty", &api.ContainerUpdate{Linux: &api.LinuxContainerUpdate{}}, (*api.ContainerUpdate)(nil)},
		{"linux update", &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Allow: true}}}}, &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Allow: true}}}}},
		{"linux update empty", &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Unified: map[string]string{}}}, (*api.LinuxContainerUpdate)(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := reflect.ValueOf(tc.in).MethodByName("Strip").Call(nil)[0].Interface()
			if diff := cmp.Diff(tc.want, got, exportedOnly); diff != "" {
				t.Fatalf("Strip() (-want +got):\n%s", diff)
			}
			if reflect.ValueOf(got).IsNil() {
				return
			}
			if got != tc.in {
				t.Errorf("Strip returned a new message, want its receiver")
			}
		})
	}
}

// messageTypes returns the Go types of the messages of package api, by
// name.
func messageTypes(t *testing.T) map[string]reflect.Type {
	t.Helper()
	pkg := api.File_pkg_api_api_proto.Package()
	types := map[string]reflect.Type{}
	msgs := api.File_pkg_api_api_proto.Messages()
	for i := range msgs.Len() {
		name := msgs.Get(i).FullName()
		mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
		if err != nil {
			t.Fatal(err)
		}
		types[string(name)[len(pkg)+1:]] = reflect.TypeOf(mt.Zero().Interface())
	}
	return types
}

// TestStripFieldByField sets each field of each strippable message in turn
// and checks what Strip makes of it: an empty message of a strippable type
// is stripped away, while any other message field and any non-zero scalar
// is kept. (Zero scalars are unset to begin with.)
func TestStripFieldByField(t *testing.T) {
	types := messageTypes(t)
	var have []string
	for name, typ := range types {
		if _, ok := typ.MethodByName("Strip"); ok {
			have = append(have, name)
		}
	}
	slices.Sort(have)
	want := slices.Sorted(slices.Values(stripped))
	if !slices.Equal(have, want) {
		t.Fatalf("messages with Strip: %v, want %v", have, want)
	}

	for _, name := range stripped {
		msgType := types[name]
		fields := reflect.New(msgType.Elem()).Interface().(proto.Message).ProtoReflect().Descriptor().Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			if fd.IsList() || fd.IsMap() {
				continue // see TestStrip
			}
			t.Run(name+"."+string(fd.Name()), func(t *testing.T) {
				m := reflect.New(msgType.Elem()).Interface().(proto.Message)
				r := m.ProtoReflect()
				var kept bool
				if fd.Message() != nil {
					r.Set(fd, protoreflect.ValueOfMessage(r.NewField(fd).Message()))
					_, strippable := types[string(fd.Message().Name())].MethodByName("Strip")
					kept = !strippable
				} else {
					r.Set(fd, nonZero(fd))
					kept = true
				}
				got := reflect.ValueOf(m).MethodByName("Strip").Call(nil)[0]
				if kept == got.IsNil() {
					t.Fatalf("Strip() = %v, want kept %v", got, kept)
				}
				if !kept && r.Has(fd) {
					t.Fatalf("Strip left the empty %s set", fd.Name())
				}
			})
		}
	}
}

// nonZero returns a non-zero value for a scalar field.
func nonZero(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("x")
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(1)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(-1)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(-1)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(1)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(1)
	}
	panic("unexpected kind " + fd.Kind().String())
}
