package interop_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/test/interop/internal/wire"
)

// This file compares the merged results of scripted plugins, request by
// request, between the upstream runtime and nrinet's, with upstream and
// nrinet plugins.

// scripted are the plugins the merge tests run, in their order.
var scripted = []struct{ name, idx string }{{"a", "10"}, {"b", "20"}, {"c", "30"}}

// mergeCase is one request and what each plugin answers to it.
type mergeCase struct {
	name string
	// create or update is the request; its container's ID is unique in
	// its table, as the plugins' scripts are by container ID.
	create *api.CreateContainerRequest
	update *api.UpdateContainerRequest
	// creates or updates are the plugins' answers, by plugin name.
	creates map[string]*api.CreateContainerResponse
	updates map[string]*api.UpdateContainerResponse
	// conflict lists the plugins a failure must name; nil if the
	// request must succeed.
	conflict []string
}

func (c *mergeCase) id() string {
	if c.create != nil {
		return c.create.GetContainer().GetId()
	}
	return c.update.GetContainer().GetId()
}

// send sends the case's request to d and returns the result.
func (c *mergeCase) send(t *testing.T, d *driverProc) driverLine {
	t.Helper()
	if c.create != nil {
		return d.request(t, "create", c.create)
	}
	return d.request(t, "update", c.update)
}

// scripts returns each scripted plugin's script for cases.
func scripts(cases []*mergeCase) map[string]wire.Script {
	out := map[string]wire.Script{}
	for _, p := range scripted {
		out[p.name] = wire.Script{}
	}
	for _, c := range cases {
		for p, rsp := range c.creates {
			out[p][c.id()] = wire.ScriptEntry{Create: wire.JSON(rsp)}
		}
		for p, rsp := range c.updates {
			out[p][c.id()] = wire.ScriptEntry{Update: wire.JSON(rsp)}
		}
	}
	return out
}

// startScripted starts a driver of runtime impl and the scripted plugins
// of impl plugins, and waits until every plugin is synchronized.
func startScripted(t *testing.T, runtime, plugins string, scripts map[string]wire.Script) *driverProc {
	t.Helper()
	d := startDriver(t, runtime)
	dir := t.TempDir()
	var outs []string
	for _, p := range scripted {
		script := filepath.Join(dir, p.name+"-script.json")
		b, err := json.Marshal(scripts[p.name])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(script, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, p.name+".jsonl")
		startPluginConfig(t, plugins, d.sock, p.name, p.idx, fmt.Sprintf(`{"out":%q,"script":%q}`, out, script))
		outs = append(outs, out)
	}
	for _, out := range outs {
		waitRecord(t, out, "Synchronize")
	}
	return d
}

// Constructors of optional values, so that the tests do not depend on
// the api package's helpers.
func optI64(v int64) *api.OptionalInt64   { return &api.OptionalInt64{Value: v} }
func optU64(v uint64) *api.OptionalUInt64 { return &api.OptionalUInt64{Value: v} }
func optU32(v uint32) *api.OptionalUInt32 { return &api.OptionalUInt32{Value: v} }
func optBool(v bool) *api.OptionalBool    { return &api.OptionalBool{Value: v} }
func optStr(v string) *api.OptionalString { return &api.OptionalString{Value: v} }
func optInt(v int64) *api.OptionalInt     { return &api.OptionalInt{Value: v} }
func bindMount(dst string) *api.Mount {
	return &api.Mount{Destination: dst, Type: "bind", Source: "/src" + dst, Options: []string{"rbind", "ro"}}
}
func removeMount(dst string) *api.Mount { return &api.Mount{Destination: "-" + dst} }
func env(k, v string) *api.KeyValue     { return &api.KeyValue{Key: k, Value: v} }
func resources(r *api.LinuxResources) *api.LinuxContainerAdjustment {
	return &api.LinuxContainerAdjustment{Resources: r}
}

// testContainer is the golden container with more of everything plugins
// can remove or replace: annotations, mounts, environment, devices,
// namespaces, sysctls, net devices.
func testContainer(t *testing.T, id string) *api.Container {
	c := golden(t, "container.json", &api.Container{})
	c.Id = id
	c.Annotations["example.com/remove-me"] = "x"
	for _, dst := range []string{"/data", "/cache", "/logs", "/spool"} {
		c.Mounts = append(c.Mounts, bindMount(dst))
	}
	c.Env = append(c.Env, "HOME=/root")
	c.Linux.Devices = []*api.LinuxDevice{{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229}}
	c.Linux.Namespaces = append(c.Linux.Namespaces, &api.LinuxNamespace{Type: "ipc"})
	c.Linux.Sysctl = map[string]string{"kernel.msgmax": "8192", "net.core.somaxconn": "1024"}
	c.Linux.NetDevices = map[string]*api.LinuxNetDevice{"eth9": {Name: "net9"}}
	return c
}

func createReq(t *testing.T, id string) *api.CreateContainerRequest {
	return &api.CreateContainerRequest{Pod: golden(t, "pod.json", &api.PodSandbox{}), Container: testContainer(t, id)}
}

func updateReq(t *testing.T, id string) *api.UpdateContainerRequest {
	return &api.UpdateContainerRequest{
		Pod:            golden(t, "pod.json", &api.PodSandbox{}),
		Container:      testContainer(t, id),
		LinuxResources: golden(t, "resources.json", &api.LinuxResources{}),
	}
}

// update is a ContainerUpdate of container id.
func update(id string, ignore bool, r *api.LinuxResources) *api.ContainerUpdate {
	return &api.ContainerUpdate{ContainerId: id, IgnoreFailure: ignore, Linux: &api.LinuxContainerUpdate{Resources: r}}
}

// mergeCases are the scenarios both implementations must merge alike.
//
// They avoid the inputs where nrinet deliberately differs from upstream,
// which TestFixedDefects checks instead:
//   - a plugin removing ("-k") a map key (annotation, sysctl, net device)
//     an earlier plugin set in the same request: upstream keeps both "k"
//     and "-k", nrinet drops the earlier value;
//   - more than one pure mount removal in one plugin's answer: upstream
//     emits the markers in random (map) order;
//   - removals of environment variables or devices: upstream drops the
//     marker from the reply, nrinet forwards it;
//   - pids in container updates: upstream drops them;
//   - a plugin setting the same field twice in one answer: upstream
//     reports a conflict of the plugin with itself;
//   - an UpdateContainer request whose target no plugin touched: upstream
//     appends a nil entry to the reply's update list;
//   - an UpdateContainer request with pids in its resources that two
//     plugins update: upstream reports a pids conflict between them;
//   - an ignored (ignore_failure) update that fails after claiming some
//     fields: upstream keeps those claims, nrinet drops them.
func mergeCases(t *testing.T) []*mergeCase {
	allKinds := &mergeCase{
		name:   "every-adjustment",
		create: createReq(t, "ctr-every-adjustment"),
		creates: map[string]*api.CreateContainerResponse{
			"a": {
				Adjust: &api.ContainerAdjustment{
					Annotations: map[string]string{"example.com/a": "1", "-example.com/remove-me": ""},
					Mounts:      []*api.Mount{bindMount("/mnt/a"), removeMount("/cache")},
					Env:         []*api.KeyValue{env("HOME", "/home/a"), env("A", "1")},
					Args:        []string{"/bin/a", "--flag"},
					Hooks: &api.Hooks{
						Prestart:      []*api.Hook{{Path: "/hooks/a", Args: []string{"a", "prestart"}, Env: []string{"A=1"}, Timeout: optInt(5)}},
						CreateRuntime: []*api.Hook{{Path: "/hooks/a-create-runtime"}},
					},
					Linux: &api.LinuxContainerAdjustment{
						Devices: []*api.LinuxDevice{{Path: "/dev/a0", Type: "c", Major: 10, Minor: 200, FileMode: &api.OptionalFileMode{Value: 0o666}, Uid: optU32(0), Gid: optU32(5)}},
						Resources: &api.LinuxResources{
							Memory: &api.LinuxMemory{
								Limit: optI64(1 << 30), Reservation: optI64(1 << 29), Swap: optI64(2 << 30), Kernel: optI64(1 << 26),
								KernelTcp: optI64(1 << 25), Swappiness: optU64(0), DisableOomKiller: optBool(false), UseHierarchy: optBool(true),
							},
							HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 1 << 30}},
							Devices:        []*api.LinuxDeviceCgroup{{Allow: true, Type: "c", Major: optI64(10), Minor: optI64(200), Access: "rwm"}},
						},
						IoPriority: &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4},
						Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/a"}},
						Sysctl:     map[string]string{"net.ipv4.ip_forward": "1"},
						Scheduler:  &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_BATCH, Nice: 5, Flags: []api.LinuxSchedulerFlag{api.LinuxSchedulerFlag_SCHED_FLAG_RESET_ON_FORK}},
					},
					Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NPROC", Hard: 1024, Soft: 512}},
				},
				Update: []*api.ContainerUpdate{
					update("ctr-x", true, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(1 << 30)}}),
					update("ctr-y", false, &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: optU64(512)}}),
				},
			},
			"b": {
				Adjust: &api.ContainerAdjustment{
					Annotations: map[string]string{"example.com/b": "2"},
					Mounts:      []*api.Mount{bindMount("/mnt/b"), removeMount("/data")},
					Env:         []*api.KeyValue{env("B", "2")},
					Hooks: &api.Hooks{
						Prestart: []*api.Hook{{Path: "/hooks/b"}},
						Poststop: []*api.Hook{{Path: "/hooks/b-poststop", Args: []string{"b"}}},
					},
					Linux: &api.LinuxContainerAdjustment{
						Resources: &api.LinuxResources{
							Cpu: &api.LinuxCPU{
								Shares: optU64(2048), Quota: optI64(50000), Period: optU64(100000), RealtimeRuntime: optI64(950000),
								RealtimePeriod: optU64(1000000), Cpus: "2-3", Mems: "0",
							},
							HugepageLimits: []*api.HugepageLimit{{PageSize: "1GB", Limit: 2 << 30}},
							Unified:        map[string]string{"memory.high": "900000000"},
							Devices:        []*api.LinuxDeviceCgroup{{Allow: false, Type: "b", Major: optI64(8), Access: "w"}},
						},
						OomScoreAdj: optInt(0),
						SeccompPolicy: &api.LinuxSeccomp{
							DefaultAction: "SCMP_ACT_ERRNO", DefaultErrno: optU32(1), Architectures: []string{"SCMP_ARCH_X86_64"},
							Flags: []string{"SECCOMP_FILTER_FLAG_LOG"}, ListenerPath: "/run/seccomp.sock", ListenerMetadata: "b",
							Syscalls: []*api.LinuxSyscall{{Names: []string{"mkdir", "mkdirat"}, Action: "SCMP_ACT_ALLOW", ErrnoRet: optU32(0),
								Args: []*api.LinuxSeccompArg{{Index: 1, Value: 2, ValueTwo: 3, Op: "SCMP_CMP_EQ"}}}},
						},
						Namespaces: []*api.LinuxNamespace{{Type: "-ipc"}},
						Sysctl:     map[string]string{"-kernel.msgmax": ""},
						Rdt: &api.LinuxRdt{Remove: true, ClosId: optStr("gold"), Schemata: &api.OptionalRepeatedString{Value: []string{"L3:0=ff", "MB:0=50"}},
							EnableMonitoring: optBool(true)},
					},
					Rlimits:    []*api.POSIXRlimit{{Type: "RLIMIT_MEMLOCK", Hard: 1 << 20, Soft: 1 << 20}},
					CDIDevices: []*api.CDIDevice{{Name: "vendor.com/gpu=0"}},
				},
				Update: []*api.ContainerUpdate{
					update("ctr-x", true, &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: optU64(256), Cpus: "4-5"}}),
				},
			},
			"c": {
				Adjust: &api.ContainerAdjustment{
					Annotations: map[string]string{"example.com/c": "3"},
					Env:         []*api.KeyValue{env("C", "3")},
					Args:        []string{"", "/bin/c", "--force"},
					Linux: &api.LinuxContainerAdjustment{
						Devices: []*api.LinuxDevice{{Path: "/dev/c0", Type: "b", Major: 7, Minor: 1}},
						Resources: &api.LinuxResources{
							BlockioClass: optStr("gold-io"),
							RdtClass:     optStr("gold-rdt"),
							Pids:         &api.LinuxPids{Limit: 256},
							Unified:      map[string]string{"cpu.weight": "50"},
						},
						CgroupsPath:  "/kubepods/c",
						NetDevices:   map[string]*api.LinuxNetDevice{"eth1": {Name: "net1"}, "-eth9": nil},
						MemoryPolicy: &api.LinuxMemoryPolicy{Mode: api.MpolMode_MPOL_BIND, Nodes: "0-1", Flags: []api.MpolFlag{api.MpolFlag_MPOL_F_STATIC_NODES}},
					},
					CDIDevices: []*api.CDIDevice{{Name: "vendor.com/gpu=1"}},
				},
				Update: []*api.ContainerUpdate{
					// Conflicts with 10-a on its first field: ignored.
					update("ctr-x", true, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(3 << 30)}}),
					update("ctr-y", true, &api.LinuxResources{
						Memory:         &api.LinuxMemory{Limit: optI64(4 << 30)},
						HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 1 << 21}},
						Unified:        map[string]string{"memory.max": "4294967296"},
						BlockioClass:   optStr("slow-io"),
						RdtClass:       optStr("bronze"),
					}),
				},
			},
		},
	}
	updateCase := &mergeCase{
		name:   "update-resources",
		update: updateReq(t, "ctr-update-resources"),
		updates: map[string]*api.UpdateContainerResponse{
			"a": {Update: []*api.ContainerUpdate{
				update("ctr-update-resources", false, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(512 << 20), Swap: optI64(1 << 30)}}),
				update("ctr-x", true, &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: optU64(300)}}),
			}},
			"b": {Update: []*api.ContainerUpdate{
				update("ctr-update-resources", true, &api.LinuxResources{
					Cpu:            &api.LinuxCPU{Quota: optI64(50000), Mems: "0"},
					Unified:        map[string]string{"memory.max": "1073741824"},
					HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 1 << 22}},
				}),
			}},
			"c": {Update: []*api.ContainerUpdate{
				update("ctr-x", true, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(1 << 30)}, BlockioClass: optStr("io"), RdtClass: optStr("rdt")}),
				update("ctr-z", true, &api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "6"}}),
			}},
		},
	}
	cases := []*mergeCase{allKinds, updateCase}

	// Conflicts: two plugins set the same field.
	conflict := func(name string, p1, p2 string, adj1, adj2 *api.ContainerAdjustment) {
		cases = append(cases, &mergeCase{
			name:     "conflict-" + name,
			create:   createReq(t, "ctr-conflict-"+name),
			creates:  map[string]*api.CreateContainerResponse{p1: {Adjust: adj1}, p2: {Adjust: adj2}},
			conflict: []string{scriptedName(p1), scriptedName(p2)},
		})
	}
	conflict("env", "a", "b", &api.ContainerAdjustment{Env: []*api.KeyValue{env("X", "1")}}, &api.ContainerAdjustment{Env: []*api.KeyValue{env("X", "2")}})
	conflict("mount", "a", "c", &api.ContainerAdjustment{Mounts: []*api.Mount{bindMount("/mnt/same")}}, &api.ContainerAdjustment{Mounts: []*api.Mount{bindMount("/mnt/same")}})
	conflict("memory-limit", "b", "c",
		&api.ContainerAdjustment{Linux: resources(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(1 << 30)}})},
		&api.ContainerAdjustment{Linux: resources(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(2 << 30)}})})
	conflict("cpuset", "a", "b",
		&api.ContainerAdjustment{Linux: resources(&api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "0"}})},
		&api.ContainerAdjustment{Linux: resources(&api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "1"}})})
	conflict("namespace", "a", "c",
		&api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/a"}}}},
		&api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/c"}}}})
	conflict("sysctl", "b", "c",
		&api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Sysctl: map[string]string{"net.core.somaxconn": "4096"}}},
		&api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Sysctl: map[string]string{"net.core.somaxconn": "8192"}}})
	conflict("args", "a", "b", &api.ContainerAdjustment{Args: []string{"/bin/a"}}, &api.ContainerAdjustment{Args: []string{"/bin/b"}})
	// Updates of another container conflicting without ignore_failure.
	cases = append(cases, &mergeCase{
		name:   "conflict-update",
		update: updateReq(t, "ctr-conflict-update"),
		updates: map[string]*api.UpdateContainerResponse{
			"a": {Update: []*api.ContainerUpdate{update("ctr-x", false, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(1 << 30)}})}},
			"c": {Update: []*api.ContainerUpdate{update("ctr-x", false, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(2 << 30)}})}},
		},
		conflict: []string{"10-a", "30-c"},
	})
	return cases
}

// scriptedName is the full name of scripted plugin p.
func scriptedName(p string) string {
	for _, s := range scripted {
		if s.name == p {
			return s.idx + "-" + p
		}
	}
	panic("no scripted plugin " + p)
}

// pairings are the runtime and plugin implementations the merge tests
// run; the first is the reference.
var pairings = []struct{ runtime, plugin string }{
	{"upstream", "upstream"},
	{"nrinet", "upstream"},
	{"upstream", "nrinet"},
	{"nrinet", "nrinet"},
}

// TestMergedResults has three plugins (10-a, 20-b, 30-c, separate
// processes) answer CreateContainer and UpdateContainer requests with
// scripted adjustments and updates, for every pairing of runtime and
// plugin implementations, and requires every pairing's merged response to
// equal the upstream/upstream one field by field (after normalizing, see
// normalize), and conflicts to fail in every pairing with an error naming
// both plugins.
func TestMergedResults(t *testing.T) {
	cases := mergeCases(t)
	results := make([]map[string]driverLine, len(pairings))
	for i, pr := range pairings {
		d := startScripted(t, pr.runtime, pr.plugin, scripts(cases))
		results[i] = map[string]driverLine{}
		for _, c := range cases {
			results[i][c.name] = c.send(t, d)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.conflict != nil {
				for i, pr := range pairings {
					err := results[i][c.name].Error
					t.Logf("%s runtime, %s plugins: %s", pr.runtime, pr.plugin, err)
					if err == "" {
						t.Errorf("%s runtime, %s plugins: no conflict reported", pr.runtime, pr.plugin)
					}
					for _, p := range c.conflict {
						if !strings.Contains(err, `"`+p+`"`) {
							t.Errorf("%s runtime, %s plugins: error %q does not name plugin %q", pr.runtime, pr.plugin, err, p)
						}
					}
				}
				return
			}
			var ref proto.Message
			for i, pr := range pairings {
				got := decodeResult(t, c, results[i][c.name])
				if got == nil {
					continue
				}
				normalize(got)
				if i == 0 {
					ref = got
					checkReference(t, c, got)
					continue
				}
				if ref != nil && !proto.Equal(got, ref) {
					t.Errorf("%s runtime, %s plugins: merged result differs from upstream/upstream's:\n%s\nupstream/upstream: %s\n%s/%s: %s",
						pr.runtime, pr.plugin, strings.Join(diff("", ref.ProtoReflect(), got.ProtoReflect()), "\n"),
						protojson.Format(ref), pr.runtime, pr.plugin, protojson.Format(got))
				}
			}
		})
	}
}

// decodeResult decodes a driver's result, of either implementation, into
// nrinet's response type through the protobuf wire encoding.
func decodeResult(t *testing.T, c *mergeCase, l driverLine) proto.Message {
	t.Helper()
	if l.Error != "" {
		t.Errorf("request failed: %s", l.Error)
		return nil
	}
	var m proto.Message = &api.UpdateContainerResponse{}
	if c.create != nil {
		m = &api.CreateContainerResponse{}
	}
	if err := proto.Unmarshal(l.Proto, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// normalize prunes the empty sub-messages upstream fills its replies with
// (Hooks{}, Linux{Resources{Memory{}, Cpu{}}}, Rdt{}, ...), recursively,
// except the Optional* wrappers and LinuxPids, whose presence means "set
// to zero". Empty and nil maps and lists are alike after decoding.
func normalize(m proto.Message) { prune(m.ProtoReflect()) }

func prune(m protoreflect.Message) {
	var empty []protoreflect.FieldDescriptor
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					prune(mv.Message())
					return true
				})
			}
		case fd.IsList():
			if fd.Kind() == protoreflect.MessageKind {
				for i := range v.List().Len() {
					prune(v.List().Get(i).Message())
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			prune(v.Message())
			if name := string(fd.Message().Name()); !strings.HasPrefix(name, "Optional") && name != "LinuxPids" && proto.Size(v.Message().Interface()) == 0 {
				empty = append(empty, fd)
			}
		}
		return true
	})
	for _, fd := range empty {
		m.Clear(fd)
	}
}

// diff lists the fields in which a and b differ, by path.
func diff(path string, a, b protoreflect.Message) []string {
	var out []string
	fields := a.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		p := path + "." + string(fd.Name())
		ha, hb := a.Has(fd), b.Has(fd)
		switch {
		case !ha && !hb:
		case ha != hb:
			out = append(out, fmt.Sprintf("%s: %s vs %s", p, showField(a, fd), showField(b, fd)))
		case fd.IsList():
			la, lb := a.Get(fd).List(), b.Get(fd).List()
			if la.Len() != lb.Len() {
				out = append(out, fmt.Sprintf("%s: %s vs %s", p, showField(a, fd), showField(b, fd)))
				continue
			}
			for j := range la.Len() {
				out = append(out, diffValue(fmt.Sprintf("%s[%d]", p, j), fd, la.Get(j), lb.Get(j))...)
			}
		case fd.IsMap():
			ma, mb := a.Get(fd).Map(), b.Get(fd).Map()
			var keys []string
			ma.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool { keys = append(keys, k.String()); return true })
			mb.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool { keys = append(keys, k.String()); return true })
			slices.Sort(keys)
			for _, k := range slices.Compact(keys) {
				mk := protoreflect.ValueOfString(k).MapKey()
				kp := fmt.Sprintf("%s[%q]", p, k)
				switch {
				case !ma.Has(mk):
					out = append(out, kp+": missing vs present")
				case !mb.Has(mk):
					out = append(out, kp+": present vs missing")
				default:
					out = append(out, diffValue(kp, fd.MapValue(), ma.Get(mk), mb.Get(mk))...)
				}
			}
		default:
			out = append(out, diffValue(p, fd, a.Get(fd), b.Get(fd))...)
		}
	}
	return out
}

func diffValue(path string, fd protoreflect.FieldDescriptor, a, b protoreflect.Value) []string {
	if fd.Kind() == protoreflect.MessageKind {
		return diff(path, a.Message(), b.Message())
	}
	if !a.Equal(b) {
		return []string{fmt.Sprintf("%s: %v vs %v", path, a, b)}
	}
	return nil
}

func showField(m protoreflect.Message, fd protoreflect.FieldDescriptor) string {
	if !m.Has(fd) {
		return "unset"
	}
	partial := m.New()
	partial.Set(fd, m.Get(fd))
	return protojson.Format(partial.Interface())
}

// checkReference makes sure the upstream/upstream result holds what the
// case is about, so that agreeing on less would not pass.
func checkReference(t *testing.T, c *mergeCase, m proto.Message) {
	t.Helper()
	switch c.name {
	case "every-adjustment":
		rsp := m.(*api.CreateContainerResponse)
		adj := rsp.GetAdjust()
		// Every kind of adjustment of v0.12.5 is set.
		for _, msg := range []proto.Message{adj, adj.GetLinux(), adj.GetLinux().GetResources(), adj.GetLinux().GetResources().GetMemory(),
			adj.GetLinux().GetResources().GetCpu(), adj.GetLinux().GetRdt()} {
			fields := msg.ProtoReflect().Descriptor().Fields()
			for i := range fields.Len() {
				if fd := fields.Get(i); !msg.ProtoReflect().Has(fd) && fd.FullName() != "nri.pkg.api.v1alpha1.LinuxRdt.remove" {
					t.Errorf("reference adjustment has no %s", fd.FullName())
				}
			}
		}
		want := &api.ContainerAdjustment{
			Annotations: map[string]string{"example.com/a": "1", "example.com/b": "2", "example.com/c": "3", "-example.com/remove-me": ""},
			Mounts:      []*api.Mount{bindMount("/mnt/a"), removeMount("/cache"), bindMount("/mnt/b"), removeMount("/data")},
			Env:         []*api.KeyValue{env("HOME", "/home/a"), env("A", "1"), env("B", "2"), env("C", "3")},
			Args:        []string{"/bin/c", "--force"},
		}
		got := &api.ContainerAdjustment{Annotations: adj.GetAnnotations(), Mounts: adj.GetMounts(), Env: adj.GetEnv(), Args: adj.GetArgs()}
		if !proto.Equal(got, want) {
			t.Errorf("reference adjustment:\n got %v\nwant %v", got, want)
		}
		if l := adj.GetLinux(); l.GetOomScoreAdj() == nil || len(adj.GetHooks().GetPrestart()) != 2 ||
			len(l.GetNamespaces()) != 2 || l.GetSysctl()["-kernel.msgmax"] != "" || len(l.GetResources().GetHugepageLimits()) != 2 {
			t.Errorf("reference adjustment lacks a zero OOM score, two prestart hooks, two namespaces, a sysctl removal or two hugepage limits: %v", adj)
		}
		ups := rsp.GetUpdate()
		if len(ups) != 2 || ups[0].GetContainerId() != "ctr-x" || !ups[0].GetIgnoreFailure() || ups[1].GetContainerId() != "ctr-y" || ups[1].GetIgnoreFailure() ||
			ups[0].GetLinux().GetResources().GetMemory().GetLimit().GetValue() != 1<<30 || ups[0].GetLinux().GetResources().GetCpu().GetCpus() != "4-5" {
			t.Errorf("reference updates: %v", ups)
		}
	case "update-resources":
		ups := m.(*api.UpdateContainerResponse).GetUpdate()
		if len(ups) != 3 || ups[0].GetContainerId() != "ctr-x" || ups[1].GetContainerId() != "ctr-z" || ups[2].GetContainerId() != "ctr-update-resources" {
			t.Fatalf("reference updates: %v", ups)
		}
		res := ups[2].GetLinux().GetResources()
		if res.GetMemory().GetLimit().GetValue() != 512<<20 || res.GetCpu().GetQuota().GetValue() != 50000 || res.GetCpu().GetShares().GetValue() != 204 ||
			res.GetUnified()["memory.high"] != "200000000" || res.GetUnified()["memory.max"] != "1073741824" || ups[2].GetIgnoreFailure() {
			t.Errorf("reference update of the target: %v", ups[2])
		}
	}
}

// defectCase is an input on which nrinet deliberately merges differently
// from upstream, and the check of both results.
type defectCase struct {
	mergeCase
	// repeat sends the request this many times (default once).
	repeat int
	// check gets the upstream and the nrinet runtime's results.
	check func(t *testing.T, up, nri []driverLine)
}

// defectCases are the inputs mergeCases avoids.
func defectCases(t *testing.T) []*defectCase {
	creates := func(name string, rsps map[string]*api.CreateContainerResponse) mergeCase {
		return mergeCase{name: name, create: createReq(t, "ctr-defect-"+name), creates: rsps}
	}
	updates := func(name string, rsps map[string]*api.UpdateContainerResponse) mergeCase {
		return mergeCase{name: name, update: updateReq(t, "ctr-defect-"+name), updates: rsps}
	}
	adjust := func(adj *api.ContainerAdjustment) *api.CreateContainerResponse {
		return &api.CreateContainerResponse{Adjust: adj}
	}
	targetPids := updates("target-pids", map[string]*api.UpdateContainerResponse{
		"a": {Update: []*api.ContainerUpdate{update("ctr-defect-target-pids", false, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(1 << 30)}})}},
		"b": {Update: []*api.ContainerUpdate{update("ctr-defect-target-pids", false, &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: optU64(300)}})}},
	})
	targetPids.update.LinuxResources.Pids = &api.LinuxPids{Limit: 100}
	return []*defectCase{
		{
			// A map key an earlier plugin set, removed: upstream keeps
			// the value and adds the marker, nrinet only the marker.
			mergeCase: creates("map-removal", map[string]*api.CreateContainerResponse{
				"a": adjust(&api.ContainerAdjustment{
					Annotations: map[string]string{"example.com/k": "a"},
					Linux: &api.LinuxContainerAdjustment{
						Sysctl:     map[string]string{"net.core.rmem_max": "1"},
						NetDevices: map[string]*api.LinuxNetDevice{"eth5": {Name: "net5"}},
					},
				}),
				"b": adjust(&api.ContainerAdjustment{
					Annotations: map[string]string{"-example.com/k": ""},
					Linux: &api.LinuxContainerAdjustment{
						Sysctl:     map[string]string{"-net.core.rmem_max": ""},
						NetDevices: map[string]*api.LinuxNetDevice{"-eth5": nil},
					},
				}),
			}),
			check: func(t *testing.T, up, nri []driverLine) {
				u, n := createResult(t, up[0]).GetAdjust(), createResult(t, nri[0]).GetAdjust()
				wantUp := &api.ContainerAdjustment{
					Annotations: map[string]string{"example.com/k": "a", "-example.com/k": ""},
					Linux: &api.LinuxContainerAdjustment{
						Sysctl:     map[string]string{"net.core.rmem_max": "1", "-net.core.rmem_max": ""},
						NetDevices: map[string]*api.LinuxNetDevice{"eth5": {Name: "net5"}, "-eth5": {}},
					},
				}
				wantNri := &api.ContainerAdjustment{
					Annotations: map[string]string{"-example.com/k": ""},
					Linux: &api.LinuxContainerAdjustment{
						Sysctl:     map[string]string{"-net.core.rmem_max": ""},
						NetDevices: map[string]*api.LinuxNetDevice{"-eth5": {}},
					},
				}
				expectEqual(t, "upstream", u, wantUp)
				expectEqual(t, "nrinet", n, wantNri)
			},
		},
		{
			// Several pure mount removals of one plugin: upstream emits
			// them in map order, which varies from request to request;
			// nrinet in the plugin's order.
			mergeCase: creates("mount-removals", map[string]*api.CreateContainerResponse{
				"a": adjust(&api.ContainerAdjustment{Mounts: []*api.Mount{
					removeMount("/data"), removeMount("/cache"), removeMount("/logs"), removeMount("/spool"),
				}}),
			}),
			repeat: 40,
			check: func(t *testing.T, up, nri []driverLine) {
				want := []string{"-/data", "-/cache", "-/logs", "-/spool"}
				orders := map[string]int{}
				for _, l := range up {
					got := destinations(createResult(t, l).GetAdjust().GetMounts())
					orders[strings.Join(got, " ")]++
					if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
						t.Errorf("upstream mounts %v, want %v in any order", got, want)
					}
				}
				if len(orders) < 2 {
					t.Errorf("upstream emitted the removals in one order only in %d requests: %v", len(up), orders)
				}
				t.Logf("upstream orders in %d requests: %v", len(up), orders)
				for _, l := range nri {
					if got := destinations(createResult(t, l).GetAdjust().GetMounts()); !slices.Equal(got, want) {
						t.Errorf("nrinet mounts %v, want %v", got, want)
					}
				}
			},
		},
		{
			// A pure mount removal listed before an addition (found by
			// TestMergedResults): both emit additions first, then the
			// removal. Not a difference; kept here as its record.
			mergeCase: creates("mount-order", map[string]*api.CreateContainerResponse{
				"a": adjust(&api.ContainerAdjustment{Mounts: []*api.Mount{removeMount("/data"), bindMount("/mnt/a")}}),
			}),
			check: func(t *testing.T, up, nri []driverLine) {
				expectEqual(t, "upstream", &api.ContainerAdjustment{Mounts: createResult(t, up[0]).GetAdjust().GetMounts()},
					&api.ContainerAdjustment{Mounts: []*api.Mount{bindMount("/mnt/a"), removeMount("/data")}})
				expectEqual(t, "nrinet", &api.ContainerAdjustment{Mounts: createResult(t, nri[0]).GetAdjust().GetMounts()},
					&api.ContainerAdjustment{Mounts: []*api.Mount{bindMount("/mnt/a"), removeMount("/data")}})
			},
		},
		{
			// Removal of the container's own environment variable and
			// device: upstream drops the markers, nrinet forwards them.
			mergeCase: creates("own-removal", map[string]*api.CreateContainerResponse{
				"a": adjust(&api.ContainerAdjustment{
					Env:   []*api.KeyValue{{Key: "-HOME"}},
					Linux: &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "-/dev/fuse"}}},
				}),
			}),
			check: func(t *testing.T, up, nri []driverLine) {
				expectEnvDevices(t, "upstream", createResult(t, up[0]), nil, nil)
				expectEnvDevices(t, "nrinet", createResult(t, nri[0]), []string{"-HOME"}, []string{"-/dev/fuse"})
			},
		},
		{
			// Removal of an environment variable and a device an earlier
			// plugin replaced (beyond the documented case, which names
			// only the container's own entries): upstream drops the
			// earlier plugin's entries and the markers, so the container
			// keeps its own; nrinet forwards the markers.
			mergeCase: creates("replaced-removal", map[string]*api.CreateContainerResponse{
				"a": adjust(&api.ContainerAdjustment{
					Env:   []*api.KeyValue{env("HOME", "/home/a")},
					Linux: &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229, FileMode: &api.OptionalFileMode{Value: 0o600}}}},
				}),
				"b": adjust(&api.ContainerAdjustment{
					Env:   []*api.KeyValue{{Key: "-HOME"}},
					Linux: &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "-/dev/fuse"}}},
				}),
			}),
			check: func(t *testing.T, up, nri []driverLine) {
				expectEnvDevices(t, "upstream", createResult(t, up[0]), nil, nil)
				expectEnvDevices(t, "nrinet", createResult(t, nri[0]), []string{"-HOME"}, []string{"-/dev/fuse"})
			},
		},
		{
			// Pids in an update of another container: upstream drops
			// them, nrinet keeps them.
			mergeCase: creates("update-pids", map[string]*api.CreateContainerResponse{
				"a": {Update: []*api.ContainerUpdate{update("ctr-x", false, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(1 << 30)}, Pids: &api.LinuxPids{Limit: 99}})}},
			}),
			check: func(t *testing.T, up, nri []driverLine) {
				for impl, l := range map[string]driverLine{"upstream": up[0], "nrinet": nri[0]} {
					ups := createResult(t, l).GetUpdate()
					want := &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(1 << 30)}}
					if impl == "nrinet" {
						want.Pids = &api.LinuxPids{Limit: 99}
					}
					if len(ups) != 1 || ups[0].GetContainerId() != "ctr-x" {
						t.Fatalf("%s updates: %v", impl, ups)
					}
					expectEqual(t, impl, ups[0].GetLinux().GetResources(), want)
				}
			},
		},
		{
			// A plugin setting a field twice in one answer: upstream
			// reports a conflict of the plugin with itself, nrinet takes
			// the last value.
			mergeCase: creates("same-field-twice", map[string]*api.CreateContainerResponse{
				"a": adjust(&api.ContainerAdjustment{Env: []*api.KeyValue{env("X", "1"), env("X", "2")}}),
			}),
			check: func(t *testing.T, up, nri []driverLine) {
				if !strings.Contains(up[0].Error, `plugins "10-a" and "10-a" both tried to set`) {
					t.Errorf("upstream result %+v, want a conflict of 10-a with itself", up[0])
				}
				expectEqual(t, "nrinet", createResult(t, nri[0]).GetAdjust(), &api.ContainerAdjustment{Env: []*api.KeyValue{env("X", "2")}})
			},
		},
		{
			// An UpdateContainer request whose target no plugin changed:
			// upstream's reply ends with a nil entry, nrinet's has none.
			mergeCase: updates("untouched-target", map[string]*api.UpdateContainerResponse{
				"a": {Update: []*api.ContainerUpdate{update("ctr-x", false, &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: optU64(300)}})}},
			}),
			check: func(t *testing.T, up, nri []driverLine) {
				if n := len(updateResult(t, up[0]).GetUpdate()); n != 2 || !slices.Equal(up[0].NilUpdates, []int{1}) {
					t.Errorf("upstream reply has %d updates, nil at %v; want ctr-x and a nil entry", n, up[0].NilUpdates)
				}
				if ups := updateResult(t, nri[0]).GetUpdate(); len(ups) != 1 || ups[0].GetContainerId() != "ctr-x" || nri[0].NilUpdates != nil {
					t.Errorf("nrinet reply %v (nil at %v), want the update of ctr-x only", ups, nri[0].NilUpdates)
				}
			},
		},
		{
			// Found by writing this test: an UpdateContainer request with
			// pids whose target two plugins update. Upstream claims the
			// requested pids for every plugin updating the target, so the
			// second conflicts with the first; nrinet claims only what
			// plugins set.
			mergeCase: targetPids,
			check: func(t *testing.T, up, nri []driverLine) {
				if !strings.Contains(up[0].Error, `plugins "20-b" and "10-a" both tried to set PidsLimit`) {
					t.Errorf("upstream result %+v, want a PidsLimit conflict of 20-b with 10-a", up[0])
				}
				ups := updateResult(t, nri[0]).GetUpdate()
				if len(ups) != 1 {
					t.Fatalf("nrinet updates: %v", ups)
				}
				res := ups[0].GetLinux().GetResources()
				if res.GetPids().GetLimit() != 100 || res.GetMemory().GetLimit().GetValue() != 1<<30 || res.GetCpu().GetShares().GetValue() != 300 {
					t.Errorf("nrinet target resources %v, want requested pids, 10-a's memory limit and 20-b's CPU shares", res)
				}
			},
		},
		{
			// An ignored update failing after a first claim: upstream
			// keeps the claim (a later plugin setting that field
			// conflicts with the plugin whose update was ignored), nrinet
			// drops the update, claims and all.
			mergeCase: creates("ignored-update-claims", map[string]*api.CreateContainerResponse{
				"a": {Update: []*api.ContainerUpdate{update("ctr-x", false, &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: optU64(100)}})}},
				"b": {Update: []*api.ContainerUpdate{update("ctr-x", true, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(1 << 30)}, Cpu: &api.LinuxCPU{Shares: optU64(200)}})}},
				"c": {Update: []*api.ContainerUpdate{update("ctr-x", false, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(2 << 30)}})}},
			}),
			check: func(t *testing.T, up, nri []driverLine) {
				if !strings.Contains(up[0].Error, `plugins "30-c" and "20-b" both tried to set MemLimit`) {
					t.Errorf("upstream result %+v, want a MemLimit conflict of 30-c with 20-b", up[0])
				}
				ups := createResult(t, nri[0]).GetUpdate()
				if len(ups) != 1 {
					t.Fatalf("nrinet updates: %v", ups)
				}
				expectEqual(t, "nrinet", ups[0].GetLinux().GetResources(),
					&api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(2 << 30)}, Cpu: &api.LinuxCPU{Shares: optU64(100)}})
			},
		},
		{
			// Upstream pre-fills its reply with empty messages, nrinet
			// sets only what plugins set; normalized, they are equal.
			mergeCase: creates("prefilled", map[string]*api.CreateContainerResponse{
				"a": adjust(&api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{CgroupsPath: "/kubepods/a"}}),
			}),
			check: func(t *testing.T, up, nri []driverLine) {
				u, n := createResult(t, up[0]), createResult(t, nri[0])
				if a := u.GetAdjust(); a.GetHooks() == nil || a.GetLinux().GetResources().GetMemory() == nil ||
					a.GetLinux().GetResources().GetCpu() == nil || a.GetLinux().GetRdt() == nil {
					t.Errorf("upstream adjustment %v, want empty hooks, memory, CPU and RDT messages", a)
				}
				expectEqual(t, "nrinet", n.GetAdjust(), &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{CgroupsPath: "/kubepods/a"}})
				normalize(u)
				expectEqual(t, "normalized upstream", u, n)
			},
		},
	}
}

// TestFixedDefects runs the inputs TestMergedResults avoids, where nrinet
// deliberately merges differently from upstream, on both runtimes (with
// upstream plugins) and asserts each documented difference: upstream's
// result, and nrinet's.
func TestFixedDefects(t *testing.T) {
	cases := defectCases(t)
	var merged []*mergeCase
	for _, c := range cases {
		merged = append(merged, &c.mergeCase)
	}
	results := map[string]map[string][]driverLine{}
	for _, runtime := range []string{"upstream", "nrinet"} {
		d := startScripted(t, runtime, "upstream", scripts(merged))
		results[runtime] = map[string][]driverLine{}
		for _, c := range cases {
			for range max(c.repeat, 1) {
				results[runtime][c.name] = append(results[runtime][c.name], c.send(t, d))
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, results["upstream"][c.name], results["nrinet"][c.name])
		})
	}
}

func createResult(t *testing.T, l driverLine) *api.CreateContainerResponse {
	t.Helper()
	m := &api.CreateContainerResponse{}
	decodeInto(t, l, m)
	return m
}

func updateResult(t *testing.T, l driverLine) *api.UpdateContainerResponse {
	t.Helper()
	m := &api.UpdateContainerResponse{}
	decodeInto(t, l, m)
	return m
}

func decodeInto(t *testing.T, l driverLine, m proto.Message) {
	t.Helper()
	if l.Error != "" {
		t.Fatalf("request failed: %s", l.Error)
	}
	if err := proto.Unmarshal(l.Proto, m); err != nil {
		t.Fatal(err)
	}
}

// expectEqual compares got with want after normalizing both.
func expectEqual(t *testing.T, what string, got, want proto.Message) {
	t.Helper()
	got, want = proto.Clone(got), proto.Clone(want)
	normalize(got)
	normalize(want)
	if !proto.Equal(got, want) {
		t.Errorf("%s result differs:\n%s\n got %s\nwant %s", what, strings.Join(diff("", got.ProtoReflect(), want.ProtoReflect()), "\n"),
			protojson.Format(got), protojson.Format(want))
	}
}

func expectEnvDevices(t *testing.T, what string, rsp *api.CreateContainerResponse, env, devices []string) {
	t.Helper()
	var gotEnv, gotDevices []string
	for _, e := range rsp.GetAdjust().GetEnv() {
		gotEnv = append(gotEnv, e.GetKey())
	}
	for _, d := range rsp.GetAdjust().GetLinux().GetDevices() {
		gotDevices = append(gotDevices, d.GetPath())
	}
	if !slices.Equal(gotEnv, env) || !slices.Equal(gotDevices, devices) {
		t.Errorf("%s adjustment has env %v and devices %v, want %v and %v", what, gotEnv, gotDevices, env, devices)
	}
}

func destinations(ms []*api.Mount) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.GetDestination())
	}
	return out
}
