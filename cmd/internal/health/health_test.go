package health

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func ready() (bool, string) { return true, "" }

func notReady(why string) Check { return func() (bool, string) { return false, why } }

func TestHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "health_test_total", Help: "A counter of the test."})
	reg.MustRegister(c)
	c.Add(3)
	for _, tc := range []struct {
		name         string
		method, path string
		checks       []Check
		code         int
		body         string // the whole body, or with a trailing "…" its start
	}{
		{name: "healthz", method: "GET", path: "/healthz", code: 200, body: "ok\n"},
		{name: "healthz while not ready", method: "GET", path: "/healthz", checks: []Check{notReady("runtime gone")}, code: 200, body: "ok\n"},
		{name: "healthz HEAD", method: "HEAD", path: "/healthz", code: 200, body: "…"}, // the server, not the handler, drops the body
		{name: "readyz without checks", method: "GET", path: "/readyz", code: 200, body: "ok\n"},
		{name: "readyz all pass", method: "GET", path: "/readyz", checks: []Check{ready, ready}, code: 200, body: "ok\n"},
		{name: "readyz one fails", method: "GET", path: "/readyz", checks: []Check{ready, notReady(`plugin "10-podnet": not connected to the runtime`)},
			code: 503, body: "plugin \"10-podnet\": not connected to the runtime\n"},
		{name: "readyz two fail, in order", method: "GET", path: "/readyz", checks: []Check{notReady("a"), ready, notReady("b")},
			code: 503, body: "a; b\n"},
		{name: "readyz reason on one line", method: "GET", path: "/readyz", checks: []Check{notReady("line one\nline  two\n")},
			code: 503, body: "line one line two\n"},
		{name: "readyz without a reason", method: "GET", path: "/readyz", checks: []Check{notReady("")}, code: 503, body: "not ready\n"},
		{name: "metrics", method: "GET", path: "/metrics", code: 200, body: "# HELP health_test_total A counter of the test.\n# TYPE health_test_total counter\nhealth_test_total 3\n…"},
		{name: "POST", method: "POST", path: "/readyz", code: 405, body: "…"},
		{name: "unknown path", method: "GET", path: "/", code: 404, body: "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Handler(reg, tc.checks...).ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.code {
				t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, rec.Code, tc.code)
			}
			got := rec.Body.String()
			if prefix, ok := strings.CutSuffix(tc.body, "…"); ok {
				if !strings.HasPrefix(got, prefix) {
					t.Errorf("%s %s: body %q, want it to start with %q", tc.method, tc.path, got, prefix)
				}
			} else if got != tc.body {
				t.Errorf("%s %s: body %q, want %q", tc.method, tc.path, got, tc.body)
			}
		})
	}
}

// TestHandler_ChecksAtRequestTime: /readyz asks the checks on each
// request, so it follows the state.
func TestHandler_ChecksAtRequestTime(t *testing.T) {
	connected := make(chan bool, 1)
	state := false
	check := func() (bool, string) {
		select {
		case state = <-connected:
		default:
		}
		return state, "not connected"
	}
	h := Handler(prometheus.NewRegistry(), check)
	for i, want := range []int{503, 200, 503} {
		if i > 0 {
			connected <- want == 200
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code != want {
			t.Errorf("request %d: status %d, want %d", i, rec.Code, want)
		}
	}
}

// TestServer serves over a real TCP listener until the context ends.
func TestServer(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "health_test_gauge", Help: "A gauge of the test."})
	reg.MustRegister(g)
	g.Set(7)
	s, err := Listen("127.0.0.1:0", Handler(reg, notReady("waiting for the pod CIDR")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	base := "http://" + s.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/healthz", 200, "ok\n"},
		{"/readyz", 503, "waiting for the pod CIDR\n"},
		{"/metrics", 200, "health_test_gauge 7\n"},
	} {
		resp, err := client.Get(base + tc.path)
		if err != nil {
			t.Fatalf("GET %s: %v", tc.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.body) {
			t.Errorf("GET %s = %d %q, want %d with %q", tc.path, resp.StatusCode, b, tc.code, tc.body)
		}
	}
	client.CloseIdleConnections()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after the context ended = %v, want nil", err)
		}
	case <-time.After(ShutdownTimeout + 10*time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if _, err := client.Get(base + "/healthz"); err == nil {
		t.Error("the server still answers after Run returned")
	}
}

func TestListen_BusyAddress(t *testing.T) {
	s, err := Listen("127.0.0.1:0", Handler(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := s.Addr().String()
	if _, err := Listen(addr, Handler(prometheus.NewRegistry())); err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("Listen on the busy %s = %v, want an error naming it", addr, err)
	}
}

func TestChecks(t *testing.T) {
	var c Checks
	if ok, why := c.Ready(); !ok || why != "" {
		t.Errorf("empty Checks: Ready() = %v, %q; want true, \"\"", ok, why)
	}
	c.Add(ready, notReady("a"))
	c.Add(notReady("b\nc"))
	if ok, why := c.Ready(); ok || why != "a; b c" {
		t.Errorf("Ready() = %v, %q; want false, %q", ok, why, "a; b c")
	}
	rec := httptest.NewRecorder()
	Handler(prometheus.NewRegistry(), c.Ready).ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != 503 || rec.Body.String() != "a; b c\n" {
		t.Errorf("/readyz over Checks = %d %q", rec.Code, rec.Body.String())
	}
}

// TestServer_Start: stop ends the server started in the background and
// waits for it; the port is free again.
func TestServer_Start(t *testing.T) {
	s, err := Listen("127.0.0.1:0", Handler(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	stop := s.Start()
	addr := s.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	client.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Errorf("stop() = %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("second stop() = %v", err)
	}
	again, err := Listen(addr, Handler(prometheus.NewRegistry()))
	if err != nil {
		t.Fatalf("the address is still taken after stop: %v", err)
	}
	again.Close()
}

func TestCheckAddress(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		wantErr string // "" for none
	}{
		{addr: ":9465"},
		{addr: "127.0.0.1:0"},
		{addr: "[::1]:9465"},
		{addr: "localhost:9465"},
		{addr: "0.0.0.0:http"},
		{addr: "9465", wantErr: "missing port"},
		{addr: "", wantErr: "missing port"},
		{addr: "127.0.0.1:99999", wantErr: "invalid port"},
		{addr: "127.0.0.1:nine", wantErr: "unknown port"},
		{addr: "256.0.0.1:1", wantErr: `host "256.0.0.1" is not an IP address`},
		{addr: "a b:1", wantErr: `host "a b"`},
		{addr: "[::1:9465", wantErr: "missing ']'"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			err := CheckAddress(tc.addr)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("CheckAddress(%q) = %v, want nil", tc.addr, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), strconv.Quote(tc.addr))):
				t.Fatalf("CheckAddress(%q) = %v, want an error naming the address and containing %q", tc.addr, err, tc.wantErr)
			}
		})
	}
}
