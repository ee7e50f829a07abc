package podnet_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
)

// TestNRIPodnet_HealthAddress: nri-podnet started by hand with
// -health-address serves /healthz from the start, /readyz 503 with the
// reason until it has joined the runtime, 200 while it is joined, and 503
// again when the runtime goes away, and its metrics on /metrics; SIGTERM
// ends it with status 0.
func TestNRIPodnet_HealthAddress(t *testing.T) {
	e := newExtEnv(t)
	p := e.startPlugin("-http-address", "127.0.0.1:0")
	base := "http://" + testutil.LoggedAddress(t, p.logs, "serving /healthz, /readyz and /metrics", 20*time.Second, p.exited)
	get := func(path string) (int, string) { return testutil.HTTPGet(t, base+path) }
	want := func(step, path string, code int, has ...string) {
		t.Helper()
		got, body := get(path)
		if got != code {
			t.Errorf("%s: GET %s = %d %q, want %d", step, path, got, body, code)
		}
		for _, h := range has {
			if !strings.Contains(body, h) {
				t.Errorf("%s: GET %s: body does not contain %q:\n%s", step, path, h, body)
			}
		}
	}
	readyIs := func(code int) func() bool {
		return func() bool { got, _ := get("/readyz"); return got == code }
	}
	subnet := e.cfg.Subnets[0]

	want("starting", "/healthz", 200, "ok")
	want("starting", "/readyz", 503, "not connected to the runtime yet")
	testutil.WaitFor(t, "nri-podnet to try the runtime's socket", 20*time.Second, func() bool {
		return strings.Contains(p.logs.String(), "could not join the runtime")
	})
	want("no runtime", "/readyz", 503, `plugin "10-podnet": not connected to the runtime yet`)
	want("no runtime", "/metrics", 200,
		`nrinet_podnet_addresses_free{subnet="`+subnet+`"} 253`, `nrinet_podnet_addresses_in_use{subnet="`+subnet+`"} 0`,
		`nrinet_podnet_errors_total{op="setup"} 0`, "go_goroutines", "process_resident_memory_bytes")

	e.startRuntime()
	e.waitJoined("runtime started")
	testutil.WaitFor(t, "/readyz to say ready", 20*time.Second, readyIs(200))
	want("joined", "/readyz", 200, "ok")
	e.runPod(1)
	want("one pod", "/metrics", 200,
		`nrinet_podnet_addresses_free{subnet="`+subnet+`"} 252`, `nrinet_podnet_addresses_in_use{subnet="`+subnet+`"} 1`,
		"nrinet_podnet_setup_duration_seconds_count 1", `nrinet_podnet_reconciles_total{kind="sync"} 1`)

	e.stopRuntime()
	testutil.WaitFor(t, "/readyz to say not ready", 20*time.Second, readyIs(503))
	want("runtime gone", "/readyz", 503, `plugin "10-podnet": not connected to the runtime: `)
	want("runtime gone", "/healthz", 200, "ok")

	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.err != nil {
			t.Errorf("nri-podnet after SIGTERM: %v, want status 0", p.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("nri-podnet did not exit after SIGTERM")
	}
}
