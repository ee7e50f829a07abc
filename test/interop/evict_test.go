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

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/test/interop/internal/wire"
)

// evictPlugins are an upstream stub plugin and an nrinet one, each asking
// for evictions in its CreateContainer and UpdateContainer answers and in
// an UpdateContainers call. The upstream stub can do neither on its own
// (its handlers return no evictions, its UpdateContainers takes only
// updates): recplugin adds them to the encoded messages.
var evictPlugins = []struct {
	impl, name, idx string
	entry           wire.ScriptEntry
}{
	{"upstream", "up", "10", wire.ScriptEntry{
		Create: wire.JSON(&api.CreateContainerResponse{
			Adjust: &api.ContainerAdjustment{Annotations: map[string]string{"example.com/up": "1"}},
			Evict:  []*api.ContainerEviction{{ContainerId: "victim-1", Reason: "up: make room"}},
		}),
		Update: wire.JSON(&api.UpdateContainerResponse{Evict: []*api.ContainerEviction{{ContainerId: "victim-6", Reason: "up: update"}}}),
		Unsolicited: wire.JSON(&api.UpdateContainersRequest{
			Update: []*api.ContainerUpdate{update("ctr-u1", false, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: optI64(1 << 30)}})},
			Evict:  []*api.ContainerEviction{{ContainerId: "victim-2", Reason: "up: unsolicited"}},
		}),
	}},
	{"nrinet", "nri", "20", wire.ScriptEntry{
		Create: wire.JSON(&api.CreateContainerResponse{Evict: []*api.ContainerEviction{{ContainerId: "victim-3", Reason: "nri: make room"}}}),
		Update: wire.JSON(&api.UpdateContainerResponse{Evict: []*api.ContainerEviction{{ContainerId: "victim-7", Reason: "nri: update"}}}),
		Unsolicited: wire.JSON(&api.UpdateContainersRequest{Evict: []*api.ContainerEviction{
			{ContainerId: "victim-4", Reason: "nri: unsolicited"}, {ContainerId: "victim-5", Reason: "nri: unsolicited too"},
		}}),
	}},
}

// startEvictPlugins starts the evictPlugins against d for container id
// and waits until they are synchronized; it returns their record files.
func startEvictPlugins(t *testing.T, d *driverProc, id string) []string {
	t.Helper()
	dir := t.TempDir()
	var outs []string
	for _, p := range evictPlugins {
		script := filepath.Join(dir, p.name+"-script.json")
		b, err := json.Marshal(wire.Script{id: p.entry})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(script, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, p.name+".jsonl")
		startPluginConfig(t, p.impl, d.sock, p.name, p.idx, fmt.Sprintf(`{"out":%q,"script":%q}`, out, script))
		outs = append(outs, out)
	}
	for _, out := range outs {
		waitRecord(t, out, "Synchronize")
	}
	return outs
}

// TestEvictions has an upstream stub plugin and an nrinet plugin ask for
// evictions in their CreateContainer and UpdateContainer answers and
// through UpdateContainers: the nrinet runtime's EvictFunc must get every
// eviction with the asking plugin's full name, the container ID and the
// reason, and the runtime's UpdateFunc the unsolicited update. The
// upstream runtime, which ignores evictions, must still take all of it
// without error.
func TestEvictions(t *testing.T) {
	const id = "ctr-evict"
	t.Run("nrinet-runtime", func(t *testing.T) {
		d := startDriver(t, "nrinet")
		outs := startEvictPlugins(t, d, id)
		if r := d.request(t, "create", createReq(t, id)); r.Error != "" {
			t.Fatalf("CreateContainer: %s", r.Error)
		}
		for _, out := range outs {
			if r := waitRecord(t, out, "UpdateContainers"); r.Error != "" || r.Failed != 0 {
				t.Errorf("%s: UpdateContainers failed: %q, %d failed updates", r.Plugin, r.Error, r.Failed)
			}
		}
		if r := d.request(t, "update", updateReq(t, id)); r.Error != "" {
			t.Fatalf("UpdateContainer: %s", r.Error)
		}

		var got []string
		for _, l := range d.awaitSide(t, "evict", 7) {
			e := &api.ContainerEviction{}
			if err := protojson.Unmarshal(l.Response, e); err != nil {
				t.Fatal(err)
			}
			got = append(got, l.Plugin+" "+e.GetContainerId()+" "+e.GetReason())
		}
		want := []string{
			"10-up victim-1 up: make room", "10-up victim-2 up: unsolicited", "10-up victim-6 up: update",
			"20-nri victim-3 nri: make room", "20-nri victim-4 nri: unsolicited", "20-nri victim-5 nri: unsolicited too",
			"20-nri victim-7 nri: update",
		}
		if sorted := slices.Sorted(slices.Values(got)); !slices.Equal(sorted, want) {
			t.Errorf("EvictFunc got\n%q\nwant\n%q", sorted, want)
		}
		// A request's evictions are delivered in plugin order.
		for _, pair := range [][2]string{{"victim-1", "victim-3"}, {"victim-6", "victim-7"}} {
			i := slices.IndexFunc(got, func(s string) bool { return slices.Contains(strings.Fields(s), pair[0]) })
			j := slices.IndexFunc(got, func(s string) bool { return slices.Contains(strings.Fields(s), pair[1]) })
			if i > j {
				t.Errorf("eviction of %s delivered after %s's: %q", pair[0], pair[1], got)
			}
		}

		ups := d.awaitSide(t, "update", 1)
		u := &api.ContainerUpdate{}
		if err := protojson.Unmarshal(ups[0].Response, u); err != nil {
			t.Fatal(err)
		}
		if len(ups) != 1 || ups[0].Plugin != "10-up" || u.GetContainerId() != "ctr-u1" || u.GetLinux().GetResources().GetMemory().GetLimit().GetValue() != 1<<30 {
			t.Errorf("UpdateFunc got %+v", ups)
		}
	})
	t.Run("upstream-runtime", func(t *testing.T) {
		d := startDriver(t, "upstream")
		outs := startEvictPlugins(t, d, id)
		r := d.request(t, "create", createReq(t, id))
		rsp := &api.CreateContainerResponse{}
		if err := proto.Unmarshal(r.Proto, rsp); err != nil || r.Error != "" {
			t.Fatalf("CreateContainer: %s %v", r.Error, err)
		}
		if rsp.GetAdjust().GetAnnotations()["example.com/up"] != "1" || len(rsp.GetEvict()) != 0 {
			t.Errorf("upstream CreateContainer response %v, want 10-up's annotation and no evictions", rsp)
		}
		for _, out := range outs {
			if r := waitRecord(t, out, "UpdateContainers"); r.Error != "" || r.Failed != 0 {
				t.Errorf("%s: UpdateContainers failed: %q, %d failed updates", r.Plugin, r.Error, r.Failed)
			}
		}
		if r := d.request(t, "update", updateReq(t, id)); r.Error != "" {
			t.Fatalf("UpdateContainer: %s", r.Error)
		}
	})
}
