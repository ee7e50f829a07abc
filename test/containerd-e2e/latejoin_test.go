package containerde2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrinet/nrinet/test/containerd-e2e/internal/syncwatch"
)

// Late-join load: how long containers are created, by how many workers
// (each in a pod of its own), and how the observer plugin joins: its
// Synchronize answer held up to lateJoinHold (well within containerd's
// request timeout), then connected for lateJoinDwell until the session's
// end, and lateJoinGrace more. Short sessions make many joins, each a
// chance to catch a creation in the act.
const (
	lateJoinDuration = 20 * time.Second
	lateJoinWorkers  = 3
	lateJoinHold     = 100 * time.Millisecond
	lateJoinDwell    = 150 * time.Millisecond
	lateJoinGrace    = 250 * time.Millisecond
)

// TestLateJoin creates containers in a tight loop (crictl create and
// start, several workers at once) while an NRI plugin joins containerd
// again and again (cmd/nri-sync-observer: connect, Synchronize held for a
// random time, events for a while, disconnect), then checks each of the
// plugin's sessions: every container whose create returned before the
// session's end must have reached it once, in its Synchronize request or
// as a CreateContainer or StartContainer event (package syncwatch). This
// is what critest's NRI spec "should receive a callback for container
// created during the Synchronize call" asks, under load.
//
// On containerd on nrinet (compat) a problem fails the test. Stock
// containerd is run for comparison: its problems are logged, not failed
// (docs/containerd.md, "Containers created while a plugin joins").
func TestLateJoin(t *testing.T) {
	skipUnlessEnabled(t)
	for _, v := range []struct {
		name, nri string
		strict    bool
	}{
		{name: "compat", nri: "compat", strict: true},
		{name: "stock", nri: "upstream"},
	} {
		t.Run(v.name, func(t *testing.T) {
			c := startContainerd(t, options{nri: v.nri, network: networkCNI})
			lateJoin(t, c, v.strict)
		})
	}
}

func lateJoin(t *testing.T, c *containerd, strict bool) {
	type worker struct {
		pod     *pod
		podFile string
	}
	workers := make([]worker, lateJoinWorkers)
	for i := range workers {
		workers[i].pod, workers[i].podFile = c.runSandbox(fmt.Sprintf("late-%d", i))
	}
	obs := c.startPlugin("50-sync-observer", env.syncObserver, "-socket", c.nriSock,
		"-name", "sync-observer", "-idx", "50",
		"-hold", lateJoinHold.String(), "-dwell", lateJoinDwell.String(), "-grace", lateJoinGrace.String())

	var (
		mu      sync.Mutex // guards created and errs
		created []syncwatch.Creation
		errs    []string
		wg      sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(lateJoinDuration)
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				name := fmt.Sprintf("late-%d-%d", w, i)
				ctrFile := filepath.Join(c.dir, "ctr-"+name+".json")
				b, _ := json.Marshal(containerConfig(name))
				if err := os.WriteFile(ctrFile, b, 0o600); err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
					return
				}
				begin := time.Now().UnixNano()
				out, errOut, err := c.crictl("create", workers[w].pod.id, ctrFile, workers[w].podFile)
				end := time.Now().UnixNano()
				id := strings.TrimSpace(out)
				if err == nil {
					c.seen.add(id)
					_, errOut, err = c.crictl("start", id)
				}
				mu.Lock()
				if id != "" {
					created = append(created, syncwatch.Creation{ID: id, Start: begin, End: end})
				}
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %v: %s", name, err, errOut))
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	obs.stop()
	for _, e := range errs {
		t.Errorf("creating containers: %s", e)
	}
	if obs.cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("nri-sync-observer exited with %v\nstderr:\n%s", obs.cmd.ProcessState, obs.stderr)
	}
	sessions := readSessions(t, obs.stdout.String())
	problems, completed := syncwatch.Check(sessions, created)
	early := 0
	for _, s := range sessions {
		if s.Error != "" {
			early++
			t.Logf("session %d ended early: %s", s.N, s.Error)
		}
	}
	t.Logf("%d containers created and started in %v by %d workers; the plugin joined %d times (%d sessions checked, %d ended early)",
		len(created), elapsed.Round(time.Millisecond), lateJoinWorkers, len(sessions), completed, early)
	report := t.Logf
	if strict {
		report = t.Errorf
		if completed < 10 {
			t.Errorf("only %d complete sessions: the check says little", completed)
		}
		if early > 0 {
			t.Errorf("%d sessions ended early (the runtime closed the plugin's connection)", early)
		}
	}
	for _, p := range problems {
		report("%s", p)
	}
	if len(problems) > 0 {
		report("%d problems over %d sessions", len(problems), completed)
	}
}

// readSessions parses nri-sync-observer's output, one JSON session a line.
func readSessions(t *testing.T, out string) []syncwatch.Session {
	t.Helper()
	var sessions []syncwatch.Session
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var s syncwatch.Session
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("nri-sync-observer output: %v\n%s", err, sc.Text())
		}
		sessions = append(sessions, s)
	}
	return sessions
}
