package testutil

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestAdjustSpec(t *testing.T) {
	bundleSpec := `{"process":{"oomScoreAdj":-998,"args":["/pause"]},"linux":{"resources":{"hugepageLimits":[{"pageSize":"2MB","limit":0}],"memory":{"limit":1}}}}`
	tests := []struct {
		name        string
		in          string
		bundle      bool
		min         int
		dropHugetlb bool
		want        string // "" for unchanged
	}{
		{"bundle: score raised, hugetlb dropped", bundleSpec, true, 0, true,
			`{"process":{"oomScoreAdj":0,"args":["/pause"]},"linux":{"resources":{"memory":{"limit":1}}}}`},
		{"bundle: score raised, hugetlb kept", bundleSpec, true, 0, false,
			`{"process":{"oomScoreAdj":0,"args":["/pause"]},"linux":{"resources":{"hugepageLimits":[{"pageSize":"2MB","limit":0}],"memory":{"limit":1}}}}`},
		{"bundle: score already high enough", bundleSpec, true, -999, false, ""},
		{"exec process: score raised", `{"oomScoreAdj":-998,"args":["sh"]}`, false, 0, true,
			`{"oomScoreAdj":0,"args":["sh"]}`},
		{"exec process: no score", `{"args":["sh"]}`, false, 0, true, ""},
		{"exec process: linux key is not a spec's", `{"args":["sh"],"linux":{"resources":{"hugepageLimits":[]}}}`, false, 0, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, []byte(tc.in), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := adjustSpec(path, tc.bundle, tc.min, tc.dropHugetlb); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == "" {
				if string(got) != tc.in {
					t.Fatalf("rewritten, want unchanged:\n%s", got)
				}
				return
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(want), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("got %s\nwant %s", got, want)
			}
		})
	}
}

func TestAdjustSpec_RefusesJunk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := adjustSpec(path, true, 0, true); err == nil {
		t.Fatal("no error for a spec that is not JSON")
	}
}

func TestHugetlbUsableIn(t *testing.T) {
	const (
		v1Cpu      = "30 27 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
		v1Hugetlb  = "31 27 0:27 / /sys/fs/cgroup/hugetlb rw,relatime - cgroup cgroup rw,hugetlb\n"
		unified    = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
		v2Only     = "41 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"
		notCgroups = "45 27 254:0 /run/netns /run/netns rw,relatime shared:1 - ext4 /dev/vda rw\n"
	)
	controllers := func(list string) func(string) ([]byte, error) {
		return func(path string) ([]byte, error) {
			if path != "/sys/fs/cgroup/cgroup.controllers" && path != "/sys/fs/cgroup/unified/cgroup.controllers" {
				t.Errorf("read %s", path)
			}
			return []byte(list), nil
		}
	}
	tests := []struct {
		name       string
		mountinfo  string
		controller string
		want       bool
	}{
		{"v1 with a hugetlb hierarchy", v1Cpu + v1Hugetlb + notCgroups, "", true},
		{"hybrid, hugetlb on the unified hierarchy (this machine)", v1Cpu + unified + notCgroups, "hugetlb\n", false},
		{"v2 alone with hugetlb", v2Only, "cpuset cpu io memory hugetlb pids\n", true},
		{"v2 alone without hugetlb", v2Only, "cpuset cpu io memory pids\n", false},
		{"v1 without hugetlb", v1Cpu, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hugetlbUsableIn(tc.mountinfo, controllers(tc.controller)); got != tc.want {
				t.Fatalf("hugetlbUsableIn = %v, want %v", got, tc.want)
			}
		})
	}
}
