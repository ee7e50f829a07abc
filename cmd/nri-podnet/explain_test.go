package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
)

func TestParseFlow(t *testing.T) {
	for _, tc := range []struct {
		src, dst, port string
		want           string // the flow, or the error's words
	}{
		{"198.18.0.2", "198.18.0.3", "8080/tcp", "198.18.0.2 -> 198.18.0.3 tcp/8080"},
		{"198.18.0.2", "198.18.0.3", "53/UDP", "198.18.0.2 -> 198.18.0.3 udp/53"},
		{"fd00:198:18::2", "fd00:198:18::3", "80", "fd00:198:18::2 -> fd00:198:18::3 tcp/80"},
		{"198.18.0.2", "198.18.0.3", "9/sctp", "sctp/9"},
		{"nope", "198.18.0.3", "80", `source "nope"`},
		{"198.18.0.2", "", "80", `destination ""`},
		{"198.18.0.2", "198.18.0.3", "0/tcp", `port "0/tcp"`},
		{"198.18.0.2", "198.18.0.3", "70000", `port "70000"`},
		{"198.18.0.2", "198.18.0.3", "80/icmp", `protocol "icmp"`},
	} {
		f, err := parseFlow(tc.src, tc.dst, tc.port)
		got := fmt.Sprint(err)
		if err == nil {
			got = f.String()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("parseFlow(%q, %q, %q) = %q, want %q", tc.src, tc.dst, tc.port, got, tc.want)
		}
	}
}

// TestExplainer: the endpoint refuses a bad query (400) and says when no
// policy engine runs (503).
func TestExplainer(t *testing.T) {
	srv := httptest.NewServer(&explainer{})
	defer srv.Close()
	for _, tc := range []struct {
		query string
		code  int
		says  string
	}{
		{"src=198.18.0.2&dst=198.18.0.3&port=80/tcp", http.StatusServiceUnavailable, "not enforced"},
		{"src=x&dst=198.18.0.3&port=80/tcp", http.StatusBadRequest, `source "x"`},
	} {
		resp, err := http.Get(srv.URL + "/explain?" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_, _ = fmt.Fprint(&b, readAll(t, resp))
		if resp.StatusCode != tc.code || !strings.Contains(b.String(), tc.says) {
			t.Errorf("%s: %s %q, want %d saying %q", tc.query, resp.Status, b.String(), tc.code, tc.says)
		}
	}
}

func readAll(t *testing.T, r *http.Response) string {
	t.Helper()
	defer r.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestExplainCommand: the command asks the endpoint with the flow and
// prints its answer; bad arguments are usage errors (exit status 2)
// that ask nothing.
func TestExplainCommand(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RequestURI())
		if r.URL.Query().Get("dst") == "198.18.0.9" {
			http.Error(w, "no NetworkPolicy table written yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, netpol.Explanation{Flow: netpol.Flow{}})
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var out strings.Builder
	explain := func(args ...string) error {
		c, address := newExplainCommand()
		return explainCommand(c, address, args, &out)
	}
	if err := explain("-address", addr, "198.18.0.2", "198.18.0.3", "8080/tcp"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "allowed:") || len(asked) != 1 || asked[0] != "/explain?dst=198.18.0.3&port=8080%2Ftcp&src=198.18.0.2" {
		t.Errorf("printed %q after asking %q", out.String(), asked)
	}
	err := explain("-address", addr, "198.18.0.2", "198.18.0.9", "80")
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "no NetworkPolicy table") {
		t.Errorf("an engine without a table: %v", err)
	}
	asked = nil
	for _, args := range [][]string{
		{"198.18.0.2", "198.18.0.3"},
		{"198.18.0.2", "198.18.0.3", "80/icmp"},
		{"-address", "nohost", "198.18.0.2", "198.18.0.3", "80"},
		{"-bogus"},
	} {
		err := explain(args...)
		if cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "(run 'nri-podnet explain -help' for usage)") {
			t.Errorf("explain %q: %v (exit status %d), want a usage error", args, err, cli.ExitCode(err))
		}
	}
	if len(asked) != 0 {
		t.Errorf("bad arguments asked %q", asked)
	}
	c, address := newExplainCommand()
	var stdout, stderr strings.Builder
	if status := c.Report(explainCommand(c, address, []string{"-h"}, &out), &stdout, &stderr); status != 0 ||
		!strings.HasPrefix(stdout.String(), "Usage:\n  nri-podnet explain [-address HOST:PORT] SRC DST PORT/PROTO\n") || stderr.Len() > 0 {
		t.Errorf("-h: exit status %d, stdout %q, stderr %q", status, stdout.String(), stderr.String())
	}
}
