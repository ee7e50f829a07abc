package podnet

import "testing"

func TestIsHostVethName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{hostVethName("pod-1"), true},
		{hostVethName(""), true},
		{"nrp0123456789ab", true},
		{"nrp0123456789AB", false},
		{"nrp0123456789a", false},
		{"nrp0123456789abc", false},
		{"nrpfor01234567", false},
		{"nrq0123456789ab", false},
		{"eth0", false},
		{"", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isHostVethName(tc.name); got != tc.want {
				t.Errorf("isHostVethName(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}
