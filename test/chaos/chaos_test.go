package chaos

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"google.golang.org/grpc/codes"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/internal/testutil"
)

// Chaos actions and their weights. A kill "in an operation" waits until a
// worker begins an operation of a kind picked at random (RunPodSandbox,
// StopPodSandbox, RemovePodSandbox, PodSandboxStatus for nrinetd;
// RunPodSandbox or StopPodSandbox for nri-podnet), then kills after 0 to
// 20 ms, to land in the windows a crash matters most in.
// A kill "while starting" kills nrinetd again 0 to 300 ms after it was
// started (reconciling its store, launching nri-podnet), or as soon as it
// is ready; one "while joining" kills nri-podnet, waits until nrinetd has
// launched a new one and kills that 0 to 50 ms later (registering,
// synchronizing).
const (
	actKillNrinetd = iota
	actKillNrinetdInOp
	actKillNrinetdStarting
	actKillPodnet
	actKillPodnetInOp
	actKillPodnetJoining
	actKillTagger
	actRestart
	actCount
)

var (
	actWeights = [actCount]int{
		actKillNrinetd: 12, actKillNrinetdInOp: 12, actKillNrinetdStarting: 8,
		actKillPodnet: 12, actKillPodnetInOp: 16, actKillPodnetJoining: 8,
		actKillTagger: 12, actRestart: 12,
	}
	actNames = [actCount]string{
		"SIGKILL nrinetd", "SIGKILL nrinetd in an operation", "SIGKILL nrinetd while starting",
		"SIGKILL nri-podnet", "SIGKILL nri-podnet in an operation", "SIGKILL nri-podnet while joining",
		"SIGKILL 20-chaostag", "graceful restart",
	}
	// Operations the kills in an operation aim at.
	nrinetdOps = []string{opRun, opStop, opRemove, opStatus}
	podnetOps  = []string{opRun, opStop}
)

// Kills in an operation: how long to wait for a worker to begin one,
// and the bound of the delay after it began; bounds of the delays of the
// kills while starting and while joining.
const (
	armPatience    = 5 * time.Second
	maxInOp        = 20 * time.Millisecond
	maxInStart     = 300 * time.Millisecond
	maxInJoin      = 50 * time.Millisecond
	relaunchWithin = 40 * time.Second // nrinetd's restart backoff reaches 30 s
)

// Pace of the chaos loop: the pause before each action.
const (
	minPause = 500 * time.Millisecond
	maxPause = 3 * time.Second
)

func TestChaos(t *testing.T) {
	raw := os.Getenv(enableEnv)
	if raw == "" {
		t.Skip("set " + enableEnv + " to a duration to run it (make chaos, make chaos-ci)")
	}
	testutil.SkipUnlessRoot(t)
	duration, err := time.ParseDuration(raw)
	if err != nil || duration <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 60s or 20m", enableEnv, raw)
	}
	if os.Getenv(innerEnv) == "" {
		t.Fatal("TestChaos must run in the mount namespace TestMain sets up")
	}
	nworkers := 6
	if s := os.Getenv(workersEnv); s != "" {
		if nworkers, err = strconv.Atoi(s); err != nil || nworkers < 1 {
			t.Fatalf("%s=%q: want a positive number", workersEnv, s)
		}
	}
	seed := mrand.Uint64()
	if s := os.Getenv(seedEnv); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
	}
	rng := mrand.New(mrand.NewPCG(seed, 0))

	dir, err := os.MkdirTemp("", "nrinet-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	third := 16 + rng.IntN(224)
	v4 := netip.MustParsePrefix(fmt.Sprintf("198.19.%d.0/24", third))
	v6 := netip.MustParsePrefix(fmt.Sprintf("fd00:198:18:19%02x::/64", third))
	bridge := "nrch" + randHex(4)
	nrinetdLog, err := os.Create(filepath.Join(dir, "nrinetd.log"))
	if err != nil {
		t.Fatal(err)
	}
	taggerLog, err := os.Create(filepath.Join(dir, "chaostag.log"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDaemon(dir, nrinetdLog, bridge, v4.String(), v6.String())
	if err != nil {
		t.Fatal(err)
	}
	r := &chaosRun{t: t, id: randHex(6), start: time.Now(), d: d, v4: v4, v6: v6, dir: dir, taggerLg: taggerLog}
	t.Cleanup(func() { r.cleanup() })
	t.Logf("chaos: %v, seed %d (%s=%d repeats the choices), %d workers, bridge %s, %s and %s, directory %s",
		duration, seed, seedEnv, seed, nworkers, bridge, v4, v6, dir)

	if err := d.start(startPatience); err != nil {
		t.Fatalf("starting nrinetd: %v", err)
	}
	conn, err := d.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r.cri = criapi.NewRuntimeServiceClient(conn)
	if err := r.startTagger(); err != nil {
		t.Fatal(err)
	}
	r.waitJoined("setup")
	if n := r.violationCount(); n > 0 {
		t.Fatalf("the setup failed (%d violations)", n)
	}

	for i := range nworkers {
		r.workers = append(r.workers, newWorker(r, i, seed+uint64(i)+1))
	}
	ctx, stopWorkers := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Go(func() { w.loop(ctx) })
	}
	c := r.chaos(rng, duration)
	stopWorkers()
	wg.Wait()

	c.checkpoints++
	if err := r.checkpoint(c.checkpoints, "final"); err == nil {
		r.teardown()
	}
	r.report(c, time.Since(r.start))
}

// counts are what the chaos loop did.
type counts struct {
	actions     [actCount]int
	skipped     int            // SIGKILL nri-podnet while none ran
	inOp        map[string]int // kills in an operation, by the operation ("" if none began in time)
	checkpoints int
	podnets     map[proc]bool
}

// chaos runs the chaos loop for duration and returns what it did.
func (r *chaosRun) chaos(rng *mrand.Rand, duration time.Duration) *counts {
	c := &counts{podnets: map[proc]bool{}, inOp: map[string]int{}}
	total := 0
	for _, w := range actWeights {
		total += w
	}
	end := time.Now().Add(duration)
	nextReport := time.Now().Add(time.Minute)
	for time.Now().Before(end) {
		// The random moments of this loop's sleeps are the chaos under
		// test, not a wait for something.
		time.Sleep(minPause + time.Duration(rng.Int64N(int64(maxPause-minPause))))
		for _, p := range processesOf(podnetBin) {
			c.podnets[proc{pid: p.pid, start: p.start}] = true
		}
		r.reaped.Add(int64(reapOrphans(podnetComm)))
		act, x := 0, rng.IntN(total)
		for x >= actWeights[act] {
			x -= actWeights[act]
			act++
		}
		c.actions[act]++
		switch act {
		case actKillNrinetd, actKillNrinetdInOp:
			if act == actKillNrinetdInOp {
				c.inOp[r.awaitOp(rng, nrinetdOps)]++
			}
			r.d.kill()
			if err := r.quiesced(c, "after "+actNames[act]); err != nil {
				return c
			}
		case actKillNrinetdStarting:
			r.d.kill()
			ready, err := r.d.spawn()
			if err != nil {
				r.violate("chaos", "starting nrinetd: %v", err)
				return c
			}
			t := time.NewTimer(time.Duration(rng.Int64N(int64(maxInStart))))
			select {
			case <-t.C:
			case <-ready:
				t.Stop()
			}
			r.d.kill()
			if err := r.quiesced(c, "after "+actNames[act]); err != nil {
				return c
			}
		case actKillPodnet, actKillPodnetInOp, actKillPodnetJoining:
			if act == actKillPodnetInOp {
				c.inOp[r.awaitOp(rng, podnetOps)]++
			}
			pid := r.podnetPid()
			if pid == 0 {
				c.skipped++
				c.actions[act]--
				continue
			}
			syscall.Kill(pid, syscall.SIGKILL)
			if act == actKillPodnetJoining {
				var next int
				err := waitFor(relaunchWithin, func() error {
					if next = r.podnetPid(); next == 0 || next == pid {
						return errors.New("not relaunched")
					}
					return nil
				})
				if err != nil {
					r.violate("chaos", "nrinetd did not relaunch nri-podnet within %v of SIGKILL", relaunchWithin)
					continue
				}
				time.Sleep(time.Duration(rng.Int64N(int64(maxInJoin))))
				syscall.Kill(next, syscall.SIGKILL)
			}
		case actKillTagger:
			r.tagger.kill()
			time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Second))))
			if err := r.startTagger(); err != nil {
				r.violate("chaos", "%v", err)
				return c
			}
		case actRestart:
			if err := r.quiesced(c, "graceful restart"); err != nil {
				return c
			}
		}
		if time.Now().After(nextReport) {
			nextReport = nextReport.Add(time.Minute)
			r.t.Logf("[%v] %d operations ok, %d failed; %v; %d checkpoints; %d violations",
				time.Since(r.start).Round(time.Second), r.okOps.Load(), r.failedOps.Load(),
				c.actionSummary(), c.checkpoints, r.violationCount())
		}
	}
	return c
}

// quiesced runs a checkpoint with the workers quiesced; its error (nrinetd
// cannot be started) ends the chaos.
func (r *chaosRun) quiesced(c *counts, why string) error {
	r.gate.Lock()
	defer r.gate.Unlock()
	c.checkpoints++
	return r.checkpoint(c.checkpoints, why)
}

// awaitOp waits until a worker begins an operation of one of the kinds,
// picked at random, then for up to maxInOp more, and returns the kind; ""
// if none began within armPatience.
func (r *chaosRun) awaitOp(rng *mrand.Rand, kinds []string) string {
	t := &trigger{op: kinds[rng.IntN(len(kinds))], began: make(chan struct{})}
	r.trigger.Store(t)
	timer := time.NewTimer(armPatience)
	defer timer.Stop()
	select {
	case <-t.began:
		time.Sleep(time.Duration(rng.Int64N(int64(maxInOp)))) // a random moment in the operation: the chaos
		return t.op
	case <-timer.C:
		r.trigger.CompareAndSwap(t, nil)
		return ""
	}
}

// podnetPid returns the PID of the nri-podnet nrinetd launched, 0 if none
// runs.
func (r *chaosRun) podnetPid() int {
	for _, p := range processesOf(podnetBin) {
		if p.ppid == r.d.pid() && p.state != 'Z' {
			return p.pid
		}
	}
	return 0
}

// startTagger starts 20-chaostag.
func (r *chaosRun) startTagger() error {
	p, err := startTagger(r.d.nriSock, r.taggerLg)
	if err != nil {
		return err
	}
	r.tagger = p
	if pi, ok := readProc(p.cmd.Process.Pid); ok {
		r.taggers = append(r.taggers, pi)
	}
	return nil
}

// teardown removes every pod, stops nrinetd and 20-chaostag, and checks
// that nothing is left.
func (r *chaosRun) teardown() {
	const where = "teardown"
	items, err := r.listPods(nil)
	if err != nil {
		r.violate(where, "ListPodSandbox: %v", err)
	}
	for _, it := range items {
		ctx, cancel := opContext()
		_, err := r.cri.RemovePodSandbox(ctx, &criapi.RemovePodSandboxRequest{PodSandboxId: it.GetId()})
		cancel()
		if err != nil {
			r.violate(where, "RemovePodSandbox %s: %v", it.GetId(), err)
		}
	}
	if items, err := r.listPods(nil); err != nil || len(items) > 0 {
		r.violate(where, "pods left after removing all: %d (%v)", len(items), err)
	}
	if err := r.d.stop(stopPatience); err != nil {
		r.violate(where, "%v", err)
	}
	if err := r.tagger.stop(stopPatience); err != nil {
		r.violate(where, "%v", err)
	}
	r.waitPodnetGone(where)
	for _, p := range r.taggers {
		if now, ok := readProc(p.pid); ok && now.start == p.start && now.state != 'Z' {
			r.violate(where, "20-chaostag %v is still running", now)
		}
	}
	if err := waitFor(gonePatience, func() error {
		files, err := netnsFiles()
		if err == nil && len(files) > 0 {
			err = fmt.Errorf("%v", files)
		}
		return err
	}); err != nil {
		r.violate(where, "namespace files left: %v", err)
	}
	if err := waitFor(gonePatience, func() error {
		veths, err := r.bridgeVeths()
		if err == nil && len(veths) > 0 {
			err = fmt.Errorf("%v", veths)
		}
		return err
	}); err != nil {
		r.violate(where, "veths left on %s: %v", r.d.bridge, err)
	}
	owners, err := r.ipamState()
	if err != nil {
		r.violate(where, "nri-podnet's IPAM database: %v", err)
	}
	if len(owners) > 0 {
		r.violate(where, "IPAM owners left: %v", owners)
	}
	for _, f := range []*os.File{r.d.log, r.taggerLg} {
		r.scanLog(where, f.Name())
	}
}

// scanLog reports panics, fatal errors and data races in a log.
func (r *chaosRun) scanLog(where, path string) {
	f, err := os.Open(path)
	if err != nil {
		r.violate(where, "%v", err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		for _, bad := range []string{"DATA RACE", "panic:", "fatal error:"} {
			if strings.Contains(s, bad) {
				r.violate(where, "%s:%d: %s", filepath.Base(path), line, s)
			}
		}
	}
}

// cleanup ends whatever still runs and deletes the bridge; the namespaces
// go with the test's mount namespace. The directory is kept if the test
// failed or NRINET_CHAOS_KEEP=1.
func (r *chaosRun) cleanup() {
	r.d.kill()
	if r.tagger != nil {
		r.tagger.kill()
	}
	if files, _ := netnsFiles(); len(files) > 0 {
		for _, f := range files {
			p := filepath.Join(netnsDir, f)
			syscall.Unmount(p, syscall.MNT_DETACH)
			os.Remove(p)
		}
	}
	if br, err := netlink.LinkByName(r.d.bridge); err == nil {
		netlink.LinkDel(br)
	}
	r.d.log.Close()
	r.taggerLg.Close()
	if r.t.Failed() || os.Getenv(keepEnv) == "1" {
		r.t.Logf("logs and state kept in %s", r.dir)
		return
	}
	os.RemoveAll(r.dir)
}

func (c *counts) actionSummary() string {
	var parts []string
	for a, n := range c.actions {
		parts = append(parts, fmt.Sprintf("%s ×%d", actNames[a], n))
	}
	return strings.Join(parts, ", ")
}

// report logs what the test did and fails it with every violation.
func (r *chaosRun) report(c *counts, elapsed time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos report after %v (%d workers):\n", elapsed.Round(time.Second), len(r.workers))
	total, failed := 0, 0
	for _, kind := range opKinds {
		ok, errs := 0, map[codes.Code]int{}
		for _, w := range r.workers {
			s := w.stats[kind]
			ok += s.ok
			for code, n := range s.errs {
				errs[code] += n
			}
		}
		nerr := 0
		var byCode []string
		for code, n := range errs {
			nerr += n
			byCode = append(byCode, fmt.Sprintf("%v %d", code, n))
		}
		slices.Sort(byCode)
		total += ok
		failed += nerr
		fmt.Fprintf(&b, "  %-15s %7d ok (%6.1f/s), %6d failed %s\n", kind, ok, float64(ok)/elapsed.Seconds(), nerr, strings.Join(byCode, ", "))
	}
	fmt.Fprintf(&b, "  %-15s %7d ok (%6.1f/s), %6d failed\n", "all", total, float64(total)/elapsed.Seconds(), failed)
	fmt.Fprintf(&b, "  chaos: %s (%d nri-podnet kills skipped: none running)\n", c.actionSummary(), c.skipped)
	var inOp []string
	for op, n := range c.inOp {
		inOp = append(inOp, fmt.Sprintf("%s %d", cmp.Or(op, "none began"), n))
	}
	slices.Sort(inOp)
	fmt.Fprintf(&b, "  kills in an operation, by operation: %s\n", strings.Join(inOp, ", "))
	fmt.Fprintf(&b, "  nrinetd processes %d (a graceful restart in each checkpoint), checkpoints %d, nri-podnet incarnations seen %d, 20-chaostag incarnations %d\n",
		r.d.starts, c.checkpoints, len(c.podnets), len(r.taggers))
	fmt.Fprintf(&b, "  RunPodSandbox refused by nrinetd %d, failed in transit %d (pods found later %d); orphaned nri-podnet processes reaped %d\n",
		r.refused.Load(), r.lostRuns.Load(), r.adopted.Load(), r.reaped.Load())
	r.mu.Lock()
	violations := slices.Clone(r.violations)
	r.mu.Unlock()
	fmt.Fprintf(&b, "  violations %d", len(violations))
	r.t.Log(b.String())
	for i, v := range violations {
		if i == 100 {
			r.t.Errorf("... and %d more violations", len(violations)-i)
			break
		}
		r.t.Errorf("violation: %s", v)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
