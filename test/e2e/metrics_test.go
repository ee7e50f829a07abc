package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/metricsdoc"
	"github.com/nrinet/nrinet/internal/testutil"
)

// scenarioSeries are the values of docs/metrics.md's series column whose
// series TestMetrics_Documented brings about, by command; a row with
// another value must not be served in it.
var scenarioSeries = map[string][]string{
	"nrinetd":    {"always", "per plugin", "after a request", "after a call", "after a failed call", "after a restart"},
	"nri-podnet": {"always", "configured", "per pod", "per host port"},
	"nri-cni":    {"always"},
}

// The series column's values whose series the scenario does not bring
// about: a row with one of them must not be served.
var otherSeries = []string{"after a stale status", "after a conflict", "per oversized policy", "per enforced policy", "per isolated pod", "with logDenied"}

// TestMetrics_Documented runs nrinetd with nri-podnet pre-installed (its
// -http-address on), and nri-cni by hand waiting for its network, and
// checks that the metrics each serves on /metrics (but go_* and
// process_*) are exactly docs/metrics.md's rows for it that the scenario
// brings about, with the documented types: a pod with a host port runs,
// a second one asking for the same host port fails in nri-podnet, the
// first is inspected, and nri-podnet is killed and relaunched.
func TestMetrics_Documented(t *testing.T) {
	doc := readMetricsDoc(t)
	var podnetLog string
	d := newDaemon(t, daemonConfig{podnet: true, required: []string{"podnet"}, prepare: func(d *daemon) {
		// The pre-installed nri-podnet, with its health server; its log
		// in a file of its own, to find the server's address.
		podnetLog = filepath.Join(d.dir, "podnet.log")
		wrapper := filepath.Join(d.dir, "plugins", "10-podnet")
		if err := os.Remove(wrapper); err != nil {
			t.Fatal(err)
		}
		script := fmt.Sprintf("#!/bin/sh\nexec %s -http-address 127.0.0.1:0 2>>%s\n", podnetBin, podnetLog)
		if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}})
	nrinetdURL := "http://" + testutil.LoggedAddress(t, d.log, "serving /healthz, /readyz and /metrics", 10*time.Second, d.exited) + "/metrics"
	podnetURL := "http://" + fileAddress(t, podnetLog) + "/metrics"
	cniURL := "http://" + startCNIWaiting(t, d.dir) + "/metrics"

	hostPort := 20000 + rand.IntN(20000)
	web := d.runp(d.withHostPort(d.writePod("web", nil, false), hostPort))
	if out, errOut, err := d.crictl("runp", d.withHostPort(d.writePod("web2", nil, false), hostPort)); err == nil {
		d.ids = append(d.ids, strings.TrimSpace(out))
		t.Fatalf("a second pod on host port %d started: %s", hostPort, out)
	} else if !strings.Contains(errOut, "host port") {
		t.Errorf("the second pod on host port %d: %v\n%s", hostPort, err, errOut)
	}
	d.inspectp(web)

	checkServed(t, doc, "nri-podnet", scrape(t, podnetURL))
	checkServed(t, doc, "nri-cni", scrape(t, cniURL))

	// nri-podnet killed: nrinetd launches it again.
	podnet := launchedPid(t, d.log.String(), "10-podnet")
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", podnet)); exe != podnetBin {
		t.Fatalf("process %d, which nrinetd says is 10-podnet, runs %q, not %s", podnet, exe, podnetBin)
	}
	if err := syscall.Kill(podnet, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var served map[string]string
	testutil.WaitFor(t, "nrinetd to relaunch nri-podnet", 20*time.Second, func() bool {
		served = scrape(t, nrinetdURL)
		_, restarted := served["nrinet_nrinetd_plugin_restarts_total"]
		_, connected := served["nrinet_nrinetd_plugin_connected"]
		return restarted && connected && slices.Contains(d.info().NRI.plugins(), "10-podnet")
	})
	checkServed(t, doc, "nrinetd", served)

	d.must("stopp", web)
	d.must("rmp", web)
}

// readMetricsDoc parses docs/metrics.md.
func readMetricsDoc(t *testing.T) metricsdoc.Doc {
	t.Helper()
	f, err := os.Open("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := metricsdoc.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// checkServed compares the metrics a command served (name: type) with
// docs/metrics.md's rows for it.
func checkServed(t *testing.T, doc metricsdoc.Doc, command string, served map[string]string) {
	t.Helper()
	for name, typ := range served {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		m, ok := doc.Metric(name)
		switch {
		case !ok || !slices.Contains(m.ServedBy, command):
			t.Errorf("%s serves %s (%s), which docs/metrics.md does not list for it", command, name, typ)
		case m.Type != typ:
			t.Errorf("%s serves %s as a %s; docs/metrics.md says %s", command, name, typ, m.Type)
		}
	}
	for _, m := range doc.ServedBy(command) {
		_, ok := served[m.Name]
		switch {
		case slices.Contains(scenarioSeries[command], m.Series):
			if !ok {
				t.Errorf("%s does not serve %s (series %q in docs/metrics.md)", command, m.Name, m.Series)
			}
		case slices.Contains(otherSeries, m.Series):
			if ok {
				t.Errorf("%s serves %s, whose series docs/metrics.md says come %q, which the scenario does not do", command, m.Name, m.Series)
			}
		default:
			t.Errorf("docs/metrics.md: %s: series %q is one TestMetrics_Documented does not know", m.Name, m.Series)
		}
	}
}

// scrape gets url and returns the metrics of its text exposition, name:
// type.
func scrape(t *testing.T, url string) map[string]string {
	t.Helper()
	code, body := testutil.HTTPGet(t, url)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	if len(out) == 0 {
		t.Fatalf("GET %s: no metrics:\n%s", url, body)
	}
	return out
}

var launched = regexp.MustCompile(`msg="launched plugin" .*plugin=(\S+) .*pid=(\d+)`)

// launchedPid returns the process ID of the last launch of plugin that
// nrinetd logged.
func launchedPid(t *testing.T, log, plugin string) int {
	t.Helper()
	pid := 0
	for _, m := range launched.FindAllStringSubmatch(log, -1) {
		if m[1] == plugin {
			pid, _ = strconv.Atoi(m[2])
		}
	}
	if pid == 0 {
		t.Fatalf("nrinetd logged no launch of %s:\n%s", plugin, log)
	}
	return pid
}

var servingAt = regexp.MustCompile(`msg="serving /healthz, /readyz and /metrics" address=(\S+)`)

// fileAddress waits until the log file has the health server's address.
func fileAddress(t *testing.T, path string) string {
	t.Helper()
	var addr string
	testutil.WaitFor(t, "the health server's address in "+path, 20*time.Second, func() bool {
		b, _ := os.ReadFile(path)
		if m := servingAt.FindSubmatch(b); m != nil {
			addr = string(m[1])
		}
		return addr != ""
	})
	return addr
}

// startCNIWaiting runs nri-cni by hand with -http-address, for a CNI
// network that is not there (it waits for it, unconnected), and returns
// its health server's address.
func startCNIWaiting(t *testing.T, dir string) string {
	t.Helper()
	cfg := filepath.Join(dir, "nri-cni.json")
	b, _ := json.Marshal(map[string]any{"confDir": filepath.Join(dir, "no-net.d"), "cacheDir": filepath.Join(dir, "cni-cache")})
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &testutil.LogBuffer{}
	cmd := exec.Command(cniBin, "-config", cfg, "-socket", filepath.Join(dir, "no-runtime.sock"), "-http-address", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = logs, logs
	p, err := testutil.StartCmd("nri-cni", cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(10 * time.Second); err != nil {
			t.Errorf("nri-cni: %v\n%s", err, logs)
		}
	})
	return testutil.LoggedAddress(t, logs, "serving /healthz, /readyz and /metrics", 20*time.Second, p.Exited())
}

// withHostPort adds a TCP port mapping from hostPort (every host address)
// to port 80 to a pod file writePod wrote.
func (d *daemon) withHostPort(path string, hostPort int) string {
	d.t.Helper()
	var pod map[string]any
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &pod)
	}
	if err != nil {
		d.t.Fatal(err)
	}
	pod["port_mappings"] = []map[string]any{{"protocol": 0, "container_port": 80, "host_port": hostPort}}
	b, _ = json.Marshal(pod)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		d.t.Fatal(err)
	}
	return path
}
