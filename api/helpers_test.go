package api_test

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
)

func TestDupStringSlice(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
	}{
		{"nil", nil},
		{"empty", []string{}},
		{"values", []string{"a", "", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := api.DupStringSlice(tc.in)
			if (out == nil) != (tc.in == nil) || !slices.Equal(out, tc.in) {
				t.Fatalf("DupStringSlice(%#v) = %#v", tc.in, out)
			}
			if len(out) > 0 {
				out[0] = "changed"
				if tc.in[0] == "changed" {
					t.Errorf("copy shares its array with the original")
				}
			}
		})
	}
}

func TestDupStringMap(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]string
	}{
		{"nil", nil},
		{"empty", map[string]string{}},
		{"values", map[string]string{"a": "1", "": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := api.DupStringMap(tc.in)
			if (out == nil) != (tc.in == nil) || !maps.Equal(out, tc.in) {
				t.Fatalf("DupStringMap(%#v) = %#v", tc.in, out)
			}
			if out != nil {
				out["new"] = "x"
				if _, ok := tc.in["new"]; ok {
					t.Errorf("copy shares its map with the original")
				}
			}
		})
	}
}

func TestIsMarkedForRemovalMethods(t *testing.T) {
	type marked interface{ IsMarkedForRemoval() (string, bool) }
	for _, tc := range []struct {
		name   string
		in     marked
		key    string
		remove bool
	}{
		{"mount", &api.Mount{Destination: "/data", Source: "/src"}, "/data", false},
		{"mount removed", &api.Mount{Destination: api.MarkForRemoval("/data")}, "/data", true},
		{"mount nil", (*api.Mount)(nil), "", false},
		{"env", &api.KeyValue{Key: "FOO", Value: "-x"}, "FOO", false},
		{"env removed", &api.KeyValue{Key: "-FOO"}, "FOO", true},
		{"env only marker", &api.KeyValue{Key: "-"}, "", true},
		{"env empty", &api.KeyValue{}, "", false},
		{"env nil", (*api.KeyValue)(nil), "", false},
		{"device", &api.LinuxDevice{Path: "/dev/null"}, "/dev/null", false},
		{"device removed", &api.LinuxDevice{Path: "-/dev/null"}, "/dev/null", true},
		{"device nil", (*api.LinuxDevice)(nil), "", false},
		{"namespace", &api.LinuxNamespace{Type: "network", Path: "-"}, "network", false},
		{"namespace removed", &api.LinuxNamespace{Type: "-network"}, "network", true},
		{"namespace marked twice", &api.LinuxNamespace{Type: "--network"}, "-network", true},
		{"namespace nil", (*api.LinuxNamespace)(nil), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, remove := tc.in.IsMarkedForRemoval()
			if key != tc.key || remove != tc.remove {
				t.Fatalf("got (%q, %v), want (%q, %v)", key, remove, tc.key, tc.remove)
			}
		})
	}
}

func TestKeyValueToOCI(t *testing.T) {
	for _, tc := range []struct {
		in   *api.KeyValue
		want string
	}{
		{&api.KeyValue{Key: "A", Value: "1"}, "A=1"},
		{&api.KeyValue{Key: "A", Value: "x=y"}, "A=x=y"},
		{&api.KeyValue{Key: "A"}, "A="},
		{nil, "="},
	} {
		if got := tc.in.ToOCI(); got != tc.want {
			t.Errorf("%v.ToOCI() = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFromOCIEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []*api.KeyValue
	}{
		{"nil", nil, nil},
		{"empty", []string{}, []*api.KeyValue{}},
		{
			"entries",
			[]string{"A=1", "B=x=y", "C=", "D", "", "=v"},
			[]*api.KeyValue{
				{Key: "A", Value: "1"}, {Key: "B", Value: "x=y"}, {Key: "C"},
				{Key: "D"}, {}, {Value: "v"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := api.FromOCIEnv(tc.in)
			if diff := cmp.Diff(tc.want, got, exportedOnly); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			for i, kv := range got {
				if strings.Contains(tc.in[i], "=") && kv.ToOCI() != tc.in[i] {
					t.Errorf("%q comes back as %q", tc.in[i], kv.ToOCI())
				}
			}
		})
	}
}

func TestLinuxResourcesCopy(t *testing.T) {
	full := &api.LinuxResources{
		Memory:         &api.LinuxMemory{Limit: api.Int64(1 << 20), Reservation: api.Int64(1), Swappiness: api.UInt64(0), DisableOomKiller: api.Bool(true)},
		Cpu:            &api.LinuxCPU{Shares: api.UInt64(512), Quota: api.Int64(-1), Cpus: "0-3", Mems: "0"},
		HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 4}},
		BlockioClass:   api.String("gold"),
		RdtClass:       api.String(""),
		Unified:        map[string]string{"memory.high": "max"},
		Devices:        []*api.LinuxDeviceCgroup{{Allow: true, Type: "c", Major: api.Int64(1), Access: "rwm"}},
		Pids:           &api.LinuxPids{Limit: api.UnlimitedPidsLimit},
	}
	for _, tc := range []struct {
		name string
		in   *api.LinuxResources
	}{
		{"nil", nil},
		{"empty", &api.LinuxResources{}},
		{"memory only", &api.LinuxResources{Memory: &api.LinuxMemory{Reservation: api.Int64(7)}}},
		{"full", full},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.in.Copy()
			if diff := cmp.Diff(tc.in, out, exportedOnly); diff != "" {
				t.Fatalf("(-in +copy):\n%s", diff)
			}
			if tc.in == nil {
				return
			}
			if out == tc.in {
				t.Fatalf("Copy returned its receiver")
			}
			before := proto.Clone(tc.in)
			// Change every reachable part of the copy; the original must
			// not follow.
			if out.GetMemory().GetReservation() != nil {
				out.Memory.Reservation.Value++
			}
			if out.Cpu != nil {
				out.Cpu.Shares.Value++
				out.Cpu.Cpus = "7"
			}
			for _, l := range out.HugepageLimits {
				l.Limit++
			}
			if out.BlockioClass != nil {
				out.BlockioClass.Value = "changed"
			}
			if out.Unified != nil {
				out.Unified["memory.high"] = "1"
			}
			for _, d := range out.Devices {
				d.Major.Value++
			}
			if out.Pids != nil {
				out.Pids.Limit = 5
			}
			if !proto.Equal(before, tc.in) {
				t.Fatalf("changing the copy changed the original")
			}
		})
	}
}

func TestLinuxRdtCopy(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *api.LinuxRdt
	}{
		{"nil", nil},
		{"empty", &api.LinuxRdt{}},
		{"remove", &api.LinuxRdt{Remove: true}},
		{"full", &api.LinuxRdt{ClosId: api.String("gold"), Schemata: api.RepeatedString([]string{"L3:0=f"}), EnableMonitoring: api.Bool(true)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.in.Copy()
			if diff := cmp.Diff(tc.in, out, exportedOnly); diff != "" {
				t.Fatalf("(-in +copy):\n%s", diff)
			}
			if tc.in != nil && tc.in.Schemata != nil {
				out.Schemata.Value[0] = "changed"
				if tc.in.Schemata.Value[0] == "changed" {
					t.Errorf("copy shares its schemata with the original")
				}
			}
		})
	}
}

func TestHooksAppend(t *testing.T) {
	h := func(path string) *api.Hook { return &api.Hook{Path: path} }
	all := func(p string) *api.Hooks {
		return &api.Hooks{
			Prestart: []*api.Hook{h(p + "0")}, CreateRuntime: []*api.Hook{h(p + "1")},
			CreateContainer: []*api.Hook{h(p + "2")}, StartContainer: []*api.Hook{h(p + "3")},
			Poststart: []*api.Hook{h(p + "4")}, Poststop: []*api.Hook{h(p + "5")},
		}
	}
	for _, tc := range []struct {
		name     string
		hooks, h *api.Hooks
		want     *api.Hooks
	}{
		{"nil to nil", nil, nil, nil},
		{"nil to some", all("a"), nil, all("a")},
		{"some to nil", nil, &api.Hooks{Poststop: []*api.Hook{h("x")}}, &api.Hooks{Poststop: []*api.Hook{h("x")}}},
		{"empty to empty", &api.Hooks{}, &api.Hooks{}, &api.Hooks{}},
		{
			"all to all",
			all("a"), all("b"),
			&api.Hooks{
				Prestart:        []*api.Hook{h("a0"), h("b0")},
				CreateRuntime:   []*api.Hook{h("a1"), h("b1")},
				CreateContainer: []*api.Hook{h("a2"), h("b2")},
				StartContainer:  []*api.Hook{h("a3"), h("b3")},
				Poststart:       []*api.Hook{h("a4"), h("b4")},
				Poststop:        []*api.Hook{h("a5"), h("b5")},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.hooks.Append(tc.h)
			if !proto.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if tc.hooks != nil && got != tc.hooks {
				t.Errorf("Append returned a new Hooks, want its receiver")
			}
		})
	}
}

func TestHooksHooks(t *testing.T) {
	some := []*api.Hook{{Path: "/x"}}
	for _, tc := range []struct {
		name string
		in   *api.Hooks
		set  bool
	}{
		{"nil", nil, false},
		{"empty", &api.Hooks{}, false},
		{"empty lists", &api.Hooks{Prestart: []*api.Hook{}, Poststop: []*api.Hook{}}, false},
		{"prestart", &api.Hooks{Prestart: some}, true},
		{"create runtime", &api.Hooks{CreateRuntime: some}, true},
		{"create container", &api.Hooks{CreateContainer: some}, true},
		{"start container", &api.Hooks{StartContainer: some}, true},
		{"poststart", &api.Hooks{Poststart: some}, true},
		{"poststop", &api.Hooks{Poststop: some}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hadPrestart := tc.in.GetPrestart() != nil
			got := tc.in.Hooks()
			if tc.set && got != tc.in || !tc.set && got != nil {
				t.Fatalf("got %v, want set %v", got, tc.set)
			}
			if hadPrestart != (tc.in.GetPrestart() != nil) {
				t.Errorf("Hooks changed its receiver") // unlike Strip
			}
		})
	}
}

// upstreamAPI is where containerd/nri's pkg/api is found, if it is in the
// module cache (test/interop depends on it), or "".
func upstreamAPI(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return ""
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com/containerd/nri@"+api.Version+"/pkg/api")
	if _, err := os.Stat(filepath.Join(dir, "owners_generated.go")); err != nil {
		return ""
	}
	return dir
}

// exportedFuncs returns the signatures of the exported functions and
// methods declared in the files of dir that keep selects, by
// "Receiver.Name" or "Name".
func exportedFuncs(t *testing.T, dir string, keep func(file string) bool) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	sigs := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || !keep(filepath.Base(name)) {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			key := fd.Name.Name
			if fd.Recv != nil {
				recv := fd.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				key = recv.(*ast.Ident).Name + "." + key
			}
			sigs[key] = strings.ReplaceAll("func("+typeList(t, fset, fd.Type.Params)+") ("+typeList(t, fset, fd.Type.Results)+")", "interface{}", "any")
		}
	}
	return sigs
}

// typeList renders the types of a parameter or result list, without the
// names: signatures match whatever the parameters are called.
func typeList(t *testing.T, fset *token.FileSet, fl *ast.FieldList) string {
	if fl == nil {
		return ""
	}
	var types []string
	for _, f := range fl.List {
		var b strings.Builder
		if err := printer.Fprint(&b, fset, f.Type); err != nil {
			t.Fatal(err)
		}
		for range max(1, len(f.Names)) {
			types = append(types, b.String())
		}
	}
	return strings.Join(types, ", ")
}

// TestUpstreamHelperSurface checks that every exported function and method
// of the upstream files these helpers mirror exists here with the same
// signature, except for those left out on purpose.
func TestUpstreamHelperSurface(t *testing.T) {
	dir := upstreamAPI(t)
	if dir == "" {
		t.Skipf("containerd/nri %s is not in the module cache", api.Version)
	}
	mirrored := map[string]bool{
		"owners.go": true, "owners_generated.go": true, "validate.go": true,
		"helpers.go": true, "strip.go": true, "env.go": true, "mount.go": true,
		"device.go": true, "namespace.go": true, "resources.go": true, "hooks.go": true,
		"adjustment.go": true, "update.go": true, "optional.go": true, "container.go": true,
	}
	// leftOut reports why an upstream function is not provided, or "".
	leftOut := func(name, sig string) string {
		recv, method, _ := strings.Cut(name, ".")
		owners := recv == "OwningPlugins" || recv == "FieldOwners"
		switch {
		case name == "LinuxResources.ToOCI":
			return "" // oci.go: CRI-O calls it
		case strings.Contains(sig, "rspec."):
			return "needs the OCI runtime-spec, and no supported runtime calls it"
		case owners && (strings.HasPrefix(method, "Claim") || strings.HasPrefix(method, "Clear") ||
			strings.HasSuffix(method, "Conflict")),
			name == "NewOwningPlugins", name == "NewFieldOwners", name == "NewCompoundFieldOwners":
			return "records ownership, which package merge does"
		case name == "Mount.Cmp", name == "LinuxDevice.Cmp", name == "LinuxDevice.AccessString":
			return "runtime side, and wrong upstream"
		}
		return ""
	}
	up := exportedFuncs(t, dir, func(f string) bool { return mirrored[f] })
	ours := exportedFuncs(t, ".", func(f string) bool { return !strings.HasSuffix(f, ".pb.go") })
	provided := 0
	for _, name := range slices.Sorted(maps.Keys(up)) {
		sig := up[name]
		if why := leftOut(name, sig); why != "" {
			if _, ok := ours[name]; ok {
				t.Errorf("%s is provided, yet listed as left out (%s)", name, why)
			}
			continue
		}
		provided++
		switch got, ok := ours[name]; {
		case !ok:
			t.Errorf("missing %s %s", name, sig)
		case got != sig:
			t.Errorf("%s: signature %s, upstream %s", name, got, sig)
		}
	}
	if provided < 80 {
		t.Errorf("only %d upstream functions compared; is the upstream source complete?", provided)
	}
}
