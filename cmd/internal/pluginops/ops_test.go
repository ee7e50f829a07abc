package pluginops_test

import (
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/cmd/internal/pluginops"
	"github.com/nrinet/nrinet/internal/testutil"
)

func TestOps(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		register  error
		wantErr   string
		wantServe bool
	}{
		{name: "off", args: nil},
		{name: "on", args: []string{"-health-address", "127.0.0.1:0"}, wantServe: true},
		{name: "metrics fail", args: []string{"-health-address", "127.0.0.1:0"}, register: errors.New("boom"), wantErr: "boom"},
		{name: "bad address", args: []string{"-health-address", "256.0.0.1:1"}, wantErr: "-health-address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o := pluginops.AddFlags(fs, "nri-test")
			if err := fs.Parse(append([]string{"-version"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			if !o.Version {
				t.Error("-version not set")
			}
			called := false
			gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "nri_test_gauge", Help: "a test gauge"})
			stop, err := o.Start(slog.New(slog.DiscardHandler), func(reg prometheus.Registerer) error {
				called = true
				if tc.register != nil {
					return tc.register
				}
				return reg.Register(gauge)
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Start: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			if called != tc.wantServe {
				t.Errorf("register called: %v, want %v", called, tc.wantServe)
			}
			if !tc.wantServe {
				return
			}
			addr := o.Addr()
			code, body := testutil.HTTPGet(t, "http://"+addr+"/readyz")
			if code != http.StatusServiceUnavailable || !strings.Contains(body, "nri-test: not connected to the runtime yet") {
				t.Errorf("/readyz before a stub: %d %q", code, body)
			}
			o.Checks.Add(func() (bool, string) { return false, "second check" })
			if _, body := testutil.HTTPGet(t, "http://"+addr+"/readyz"); !strings.Contains(body, "second check") {
				t.Errorf("/readyz does not report an added check: %q", body)
			}
			if code, body := testutil.HTTPGet(t, "http://"+addr+"/metrics"); code != http.StatusOK || !strings.Contains(body, "nri_test_gauge") || !strings.Contains(body, "go_goroutines") {
				t.Errorf("/metrics: %d, without the plugin's or the Go collector's metrics:\n%s", code, body)
			}
			if code, _ := testutil.HTTPGet(t, "http://"+addr+"/healthz"); code != http.StatusOK {
				t.Errorf("/healthz: %d", code)
			}
		})
	}
}
