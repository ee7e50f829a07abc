package podnet_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/plugins/podnet"
)

// TestFromFile_Contrib reads contrib/10-podnet.conf, the example that make
// install and the release tarball ship for /etc/nri/conf.d/10-podnet.conf.
func TestFromFile_Contrib(t *testing.T) {
	c, err := podnet.FromFile(filepath.Join("..", "..", "contrib", "10-podnet.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Bridge != podnet.DefaultBridge || c.MTU != podnet.DefaultMTU || c.StateDir != podnet.DefaultStateDir ||
		!slices.Equal(c.Subnets, []string{"198.18.0.0/24", "fd00:198:18::/64"}) {
		t.Errorf("contrib/10-podnet.conf = %+v", c)
	}
}

// TestFromBytes_LogDenied: logDenied's rate, burst and group are read and
// checked; a bad value is refused, quoted.
func TestFromBytes_LogDenied(t *testing.T) {
	const base = `{"subnets": ["198.18.0.0/24"], "logDenied": %s}`
	for _, tc := range []struct {
		logDenied string
		n         uint64
		per       time.Duration
		err       string
	}{
		{`{"rate": "10/second", "group": 5}`, 10, time.Second, ""},
		{`{"rate": "1/minute", "burst": 20}`, 1, time.Minute, ""},
		{`{"rate": "3/hour", "burst": 10000, "group": 65535}`, 3, time.Hour, ""},
		{`{"rate": "2/day"}`, 2, 24 * time.Hour, ""},
		{`{}`, 0, 0, `rate ""`},
		{`{"rate": "10/sec"}`, 0, 0, `rate "10/sec"`},
		{`{"rate": "0/second"}`, 0, 0, `rate "0/second"`},
		{`{"rate": "-1/second"}`, 0, 0, `rate "-1/second"`},
		{`{"rate": "10"}`, 0, 0, `rate "10"`},
		{`{"rate": "10/second", "burst": 10001}`, 0, 0, "burst 10001"},
		{`{"rate": "10/second", "group": 65536}`, 0, 0, "group 65536"},
		{`{"rate": "10/second", "group": -1}`, 0, 0, "group -1"},
		{`{"rate": "10/second", "groups": 1}`, 0, 0, `unknown field "groups"`},
	} {
		t.Run(tc.logDenied, func(t *testing.T) {
			c, err := podnet.FromBytes([]byte(fmt.Sprintf(base, tc.logDenied)))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("FromBytes = %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n, per, err := c.LogDenied.Limit()
			if err != nil || n != tc.n || per != tc.per {
				t.Errorf("Limit() = %d per %v, %v; want %d per %v", n, per, err, tc.n, tc.per)
			}
		})
	}
	if c, err := podnet.FromBytes([]byte(`{"subnets": ["198.18.0.0/24"]}`)); err != nil || c.LogDenied != nil {
		t.Errorf("without logDenied: %+v, %v; want none", c.LogDenied, err)
	}
}
