package cri

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
)

func mustStore(t *testing.T) *Store {
	t.Helper()
	s, err := OpenStore(filepath.Join(t.TempDir(), "sandboxes.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore_PodNetwork(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	rec := &api.PodNetworkRecord{
		Network: &api.PodSandboxNetwork{Ips: []string{"198.18.0.5"}},
		Owners:  map[string]string{api.OwnerIPv4: "10-net"},
	}
	for _, sb := range []struct {
		sb  *sandbox
		rec *api.PodNetworkRecord
	}{
		{&sandbox{ID: "aaa1", State: stateReady, NetNSPath: "/nonexistent"}, rec},
		{&sandbox{ID: "aaa2", State: stateReady, NetNSPath: "/nonexistent"}, &api.PodNetworkRecord{}},
		{&sandbox{ID: "bbb", State: stateReady, HostNetwork: true}, nil},
	} {
		if err := s.create(sb.sb, sb.rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.create(&sandbox{ID: "bbb"}, nil); err == nil {
		t.Error("a second sandbox with the same ID was stored")
	}

	got, err := s.PodNetwork(ctx, "aaa1")
	if err != nil || !proto.Equal(got, rec) {
		t.Errorf("PodNetwork(aaa1) = %v, %v; want %v", got, err, rec)
	}
	if got, err := s.PodNetwork(ctx, "aaa2"); err != nil || got == nil || got.GetNetwork() != nil {
		t.Errorf("PodNetwork(aaa2) = %v, %v; want an empty record", got, err)
	}
	if got, err := s.PodNetwork(ctx, "bbb"); err != nil || got != nil {
		t.Errorf("PodNetwork(host network) = %v, %v; want nil", got, err)
	}
	if _, err := s.PodNetwork(ctx, "ccc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("PodNetwork(unknown) error = %v, want ErrNotFound", err)
	}

	// A plugin's update is stored for ready sandboxes only.
	upd := &api.PodNetworkRecord{Network: &api.PodSandboxNetwork{Ips: []string{"198.18.0.9"}}}
	if err := s.SetPodNetwork(ctx, "aaa2", "10-net", upd); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.PodNetwork(ctx, "aaa2"); !proto.Equal(got, upd) {
		t.Errorf("after SetPodNetwork: %v", got)
	}
	if err := s.SetPodNetwork(ctx, "bbb", "10-net", upd); err == nil {
		t.Error("SetPodNetwork of a host-network sandbox succeeded")
	}
	if err := s.SetPodNetwork(ctx, "ccc", "10-net", upd); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetPodNetwork(unknown) error = %v", err)
	}

	// Prefixes resolve when unique.
	for _, tc := range []struct {
		in, want string
		err      error
	}{
		{"aaa1", "aaa1", nil}, {"b", "bbb", nil}, {"aaa", "", ErrAmbiguous}, {"c", "", ErrNotFound}, {"", "", ErrInvalid},
	} {
		got, err := s.resolve(tc.in)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("resolve(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}

	// Only ready sandboxes with a live namespace (or host network) are
	// reported to joining plugins.
	pods, _, err := s.SyncPods(ctx)
	if err != nil || len(pods) != 1 || pods[0].GetId() != "bbb" {
		t.Errorf("SyncPods = %v, %v; want only the host-network sandbox", pods, err)
	}
}

func TestStore_UpdateSkipAndDelete(t *testing.T) {
	s := mustStore(t)
	if err := s.create(&sandbox{ID: "x", State: stateReady}, &api.PodNetworkRecord{}); err != nil {
		t.Fatal(err)
	}
	err := s.update("x", func(sb *sandbox, _ *api.PodNetworkRecord) (*api.PodNetworkRecord, error) {
		sb.State = stateNotReady
		return nil, errSkip
	})
	if sb, _, _ := s.get("x"); err != nil || sb.State != stateReady {
		t.Errorf("skipped update changed the sandbox: %v, %v", sb, err)
	}
	if err := s.delete("x"); err != nil {
		t.Fatal(err)
	}
	if err := s.delete("x"); err != nil {
		t.Errorf("deleting twice: %v", err)
	}
	if _, _, err := s.get("x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
}
