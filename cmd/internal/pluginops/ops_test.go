package pluginops_test

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/cmd/internal/pluginops"
	"github.com/nrinet/nrinet/internal/testutil"
)

func TestOps(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name      string
		args      []string
		register  error
		wantErr   string
		wantServe bool
	}{
		{name: "off", args: nil},
		{name: "on", args: []string{"-http-address", "127.0.0.1:0"}, wantServe: true},
		{name: "on, deprecated name", args: []string{"-health-address", "127.0.0.1:0"}, wantServe: true},
		{name: "metrics fail", args: []string{"-http-address", "127.0.0.1:0"}, register: errors.New("boom"), wantErr: "boom"},
		{name: "address in use", args: []string{"-http-address", busy.Addr().String()}, wantErr: "-http-address: health: listening on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cli.New("nri-test", "")
			o := pluginops.AddFlags(c, "test", "10")
			if err := c.Parse(append([]string{"-version"}, tc.args...)); err != nil {
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
		{name: "stray arguments", args: []string{"extra"}, wantErr: `unexpected arguments ["extra"] (run 'nri-test -help' for usage)`, wantUsage: true},
		{name: "bad log level", args: []string{"-log-level", "loud"}, wantErr: `-log-level "loud": want debug, info, warn or error`, wantUsage: true},
		{name: "verbose", args: []string{"-verbose"}, wantLog: "level=DEBUG"},
		{name: "json", args: []string{"-log-level", "debug", "-log-format", "json"}, wantLog: `"level":"DEBUG"`},
		{name: "bad flag", args: []string{"-no-such-flag"}, wantErr: "no-such-flag", wantUsage: true},
		{name: "HTTP address without a port", args: []string{"-http-address", "9465"}, wantErr: `-http-address "9465": missing port`, wantUsage: true},
		{name: "deprecated name, without a port", args: []string{"-health-address", "9465"}, wantErr: `-health-address "9465": missing port`, wantUsage: true},
		{name: "deprecated name", args: []string{"-health-address", ":0"}, wantLog: `level=WARN msg="-health-address is deprecated: use -http-address"`},
		{name: "bad index", args: []string{"-idx", "abc"}, wantErr: `-idx "abc": want two digits, 00 to 99`, wantUsage: true},
		{name: "bad name", args: []string{"-name", "a b"}, wantErr: `-name "a b": want 1 to 128 ASCII letters, digits and _.+-`, wantUsage: true},
		{name: "bad boolean", args: []string{"-verbose=maybe"}, wantErr: `-verbose "maybe": want true or false`, wantUsage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cli.New("nri-test", "")
			o := pluginops.AddFlags(c, "test", "10")
			var stdout, stderr strings.Builder
			log, done, err := o.Parse(tc.args, &stdout, &stderr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse: %v, want an error with %q", err, tc.wantErr)
				}
				if got := pluginops.ExitCode(err) == cli.ExitUsage; got != tc.wantUsage {
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
			if got := stderr.String(); tc.wantLog != "" && !strings.Contains(got, tc.wantLog) || tc.wantLog == "" && got != "" || strings.Count(got, "deprecated") > 1 {
				t.Errorf("log: %q, want %q", got, tc.wantLog)
			}
		})
	}
}
