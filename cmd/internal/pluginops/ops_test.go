package pluginops_test

import (
	"errors"
	"flag"
	"io"
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

func TestOps_Parse(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		wantDone  bool
		wantOut   string
		wantLog   string // a debug line reaches the log
		wantErr   string
		wantUsage bool
	}{
		{name: "defaults", args: nil},
		{name: "version", args: []string{"-version"}, wantDone: true, wantOut: "nri-test "},
		{name: "stray arguments", args: []string{"extra"}, wantErr: `unexpected arguments ["extra"]`, wantUsage: true},
		{name: "bad log level", args: []string{"-log-level", "loud"}, wantErr: "loud", wantUsage: true},
		{name: "verbose", args: []string{"-verbose"}, wantLog: "level=DEBUG"},
		{name: "json", args: []string{"-log-level", "debug", "-log-format", "json"}, wantLog: `"level":"DEBUG"`},
		{name: "bad flag", args: []string{"-no-such-flag"}, wantErr: "no-such-flag", wantUsage: true},
		{name: "health address without a port", args: []string{"-health-address", "9465"}, wantErr: `-health-address: address "9465": missing port`, wantUsage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o := pluginops.AddFlags(fs, "nri-test")
			var stdout, stderr strings.Builder
			log, done, err := o.Parse(fs, tc.args, &stdout, &stderr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse: %v, want an error with %q", err, tc.wantErr)
				}
				if got := pluginops.ExitCode(err) == pluginops.ExitUsage; got != tc.wantUsage {
					t.Errorf("exit status %d for %v, want usage: %v", pluginops.ExitCode(err), err, tc.wantUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if done != tc.wantDone || !strings.HasPrefix(stdout.String(), tc.wantOut) {
				t.Fatalf("Parse: done %v, stdout %q; want %v, %q", done, stdout.String(), tc.wantDone, tc.wantOut)
			}
			if done {
				return
			}
			log.Debug("a debug line")
			if got := stderr.String(); tc.wantLog != "" && !strings.Contains(got, tc.wantLog) || tc.wantLog == "" && got != "" {
				t.Errorf("log: %q, want %q", got, tc.wantLog)
			}
		})
	}
}
