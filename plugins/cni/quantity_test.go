package cni_test

import (
	"testing"

	"github.com/nrinet/nrinet/plugins/cni"
)

// TestParseBandwidth: bandwidth annotations read as containerd reads them
// (k8s.io/apimachinery's resource.ParseQuantity, Value, and the limits of
// containerd's internal/cri/bandwidth). The expected values were checked
// against apimachinery v0.37.0; the one difference is a value too large
// for an int64 ("1e1000"), which containerd wraps around.
func TestParseBandwidth(t *testing.T) {
	const (
		format = "quantities must match the regular expression"
		suffix = "unable to parse quantity's suffix"
		small  = "unreasonably small (< 1kbit)"
		large  = "unreasonably large (> 1Pbit)"
	)
	for _, tc := range []struct {
		in   string
		want uint64
		err  string
	}{
		{in: "10M", want: 10_000_000},
		{in: "1.5Mi", want: 1_572_864},
		{in: "100k", want: 100_000},
		{in: "1k", want: 1000},
		{in: "1000", want: 1000},
		{in: "+1k", want: 1000},
		{in: "0001k", want: 1000},
		{in: "1Ki", want: 1024},
		{in: "1.k", want: 1000},
		{in: "1e3", want: 1000},
		{in: "1E3", want: 1000},
		{in: "1e+3", want: 1000},
		{in: "1e03", want: 1000},
		{in: "1.5e3", want: 1500},
		{in: "1.0005k", want: 1001},  // rounded up
		{in: "1000500m", want: 1001}, // rounded up
		{in: "12.345678901234567890k", want: 12346},
		{in: "1G", want: 1_000_000_000},
		{in: "1T", want: 1_000_000_000_000},
		{in: "1Ti", want: 1_099_511_627_776},
		{in: "1P", want: 1_000_000_000_000_000},
		{in: "1000T", want: 1_000_000_000_000_000},
		{in: "1e15", want: 1_000_000_000_000_000},
		{in: "999999999999999", want: 999_999_999_999_999},
		{in: "999", err: small},
		{in: "0", err: small},
		{in: "-1k", err: small},
		{in: "0.5k", err: small},
		{in: ".5k", err: small},
		{in: "k", err: small},
		{in: ".", err: small},
		{in: "1m", err: small},
		{in: "1001m", err: small},
		{in: "1000000001n", err: small},
		{in: "1e-3", err: small},
		{in: "1e-0", err: small},
		{in: "1E", err: large},
		{in: "9E", err: large},
		{in: "1Pi", err: large},
		{in: "1Ei", err: large},
		{in: "2P", err: large},
		{in: "1.0000001P", err: large},
		{in: "1001T", err: large},
		{in: "1000000000000001", err: large},
		{in: "1e16", err: large},
		{in: "1e1000", err: large},
		{in: "", err: format},
		{in: "10 M", err: format},
		{in: "1KI", err: format},
		{in: "1Kb", err: format},
		{in: "1e3.5", err: format},
		{in: "0x10", err: format},
		{in: "1_000", err: format},
		{in: "1.2.3", err: format},
		{in: "1e", err: suffix},
		{in: "1ee3", err: suffix},
		{in: "1k3", err: suffix},
		{in: "1Mi5", err: suffix},
		{in: "--1", err: suffix},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := cni.ParseBandwidth(tc.in)
			if tc.err != "" {
				mustContain(t, err, tc.err)
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("= %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
