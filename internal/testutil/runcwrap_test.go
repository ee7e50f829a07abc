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
