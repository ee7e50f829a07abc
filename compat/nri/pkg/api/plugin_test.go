package api_test

import (
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
)

func TestCheckPluginName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"podnet", true},
		{"a.b_c+d-e", true},
		{"", false},
		{"bad name", false},
		{"slash/name", false},
		{strings.Repeat("x", 129), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := api.CheckPluginName(tc.name); (err == nil) != tc.ok {
				t.Errorf("CheckPluginName(%q) = %v, want ok %v", tc.name, err, tc.ok)
			}
		})
	}
}

func TestCheckPluginIndex(t *testing.T) {
	for _, tc := range []struct {
		idx string
		ok  bool
	}{
		{"00", true}, {"99", true}, {"0", false}, {"100", false}, {"a1", false}, {"", false},
	} {
		t.Run(tc.idx, func(t *testing.T) {
			if err := api.CheckPluginIndex(tc.idx); (err == nil) != tc.ok {
				t.Errorf("CheckPluginIndex(%q) = %v, want ok %v", tc.idx, err, tc.ok)
			}
		})
	}
}

func TestParsePluginName(t *testing.T) {
	for _, tc := range []struct {
		in, idx, base string
		err           string
	}{
		{in: "10-podnet", idx: "10", base: "podnet"},
		{in: "05-with-dashes", idx: "05", base: "with-dashes"},
		{in: "05-", idx: "05", base: ""}, // as upstream: only the index is checked
		{in: "podnet", err: `"podnet"`},
		{in: "1-podnet", err: `"1-podnet"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			idx, base, err := api.ParsePluginName(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %q, %v; want error containing %s", idx, base, err, tc.err)
				}
				return
			}
			if err != nil || idx != tc.idx || base != tc.base {
				t.Fatalf("got %q, %q, %v; want %q, %q", idx, base, err, tc.idx, tc.base)
			}
		})
	}
}
