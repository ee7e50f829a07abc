package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/internal/testutil"
)

// TestDemo_Keep runs the demo with -keep as a user would, lets it exit,
// runs and removes a pod with crictl against the nrinetd it left (which
// must stay up: its log is a file, not a pipe to the demo), leaves one
// more pod running, then runs the clean-up command the demo printed and
// finds nothing of the demo left on the host.
func TestDemo_Keep(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	if testutil.LinkExists(bridge) {
		t.Skipf("%s exists: a demo is running on this machine", bridge)
	}
	bin := t.TempDir()
	if err := testutil.GoBuild(".", bin, nil, "."); err != nil {
		t.Fatal(err)
	}
	tablesBefore, err := podnetTables()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bin, "nrinet-demo"), "-keep").CombinedOutput()
	if err != nil {
		t.Fatalf("nrinet-demo -keep: %v\n%s", err, out)
	}
	t.Logf("the demo said:\n%s", out)
	m := regexp.MustCompile(`leaving everything running: (\S+) --runtime-endpoint unix://(\S+) pods`).FindSubmatch(out)
	clean := regexp.MustCompile(`to clean up: (\S+) -clean (\S+)`).FindSubmatch(out)
	pid := regexp.MustCompile(`nrinetd \(pid (\d+)\)`).FindSubmatch(out)
	if m == nil || clean == nil || pid == nil {
		t.Fatalf("the demo did not print the crictl command, nrinetd's pid and the clean-up command")
	}
	crictlBin, sock, dir := string(m[1]), string(m[2]), string(clean[2])
	nrinetdPID, _ := strconv.Atoi(string(pid[1]))
	nrinetd := filepath.Join(dir, "bin", "nrinetd")
	cleaned := false
	t.Cleanup(func() {
		if !cleaned {
			exec.Command(string(clean[1]), "-clean", dir).Run()
		}
	})
	if !running(nrinetdPID, nrinetd) {
		t.Fatalf("nrinetd (pid %d) is gone once the demo exited", nrinetdPID)
	}
	if sid, err := sessionID(nrinetdPID); err != nil || sid != nrinetdPID {
		t.Errorf("nrinetd is not in a session of its own: session %d, %v", sid, err)
	}
	crictl, err := testutil.NewCrictl(crictlBin, sock, t.TempDir(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pods := strings.Fields(crictl.Must(t, "pods", "-q"))
	if len(pods) != 3 {
		t.Fatalf("the kept nrinetd has %d pods, want the demo's 3", len(pods))
	}
	runp := func(name string) string {
		cfg := testutil.WriteFile(t, t.TempDir(), name+".json", `{"metadata": {"name": "`+name+`", "namespace": "kept", "uid": "kept-`+name+`"}}`)
		return strings.TrimSpace(crictl.Must(t, "runp", cfg))
	}
	a := runp("a")
	if !exists(filepath.Join("/run/netns", "nrinet-"+a[:12])) {
		t.Errorf("pod a has no network namespace")
	}
	crictl.Must(t, "stopp", a)
	crictl.Must(t, "rmp", a)
	b := runp("b") // left for the clean-up
	if !running(nrinetdPID, nrinetd) {
		t.Fatalf("nrinetd died serving the pods:\n%s", readFile(filepath.Join(dir, "nrinetd.log")))
	}
	if log := readFile(filepath.Join(dir, "nrinetd.log")); !strings.Contains(log, "nri-podnet") && !strings.Contains(log, "podnet") {
		t.Errorf("nrinetd's log in %s holds no line of nri-podnet's:\n%s", dir, log)
	}

	cl, err := exec.Command(string(clean[1]), "-clean", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%s -clean %s: %v\n%s", clean[1], dir, err, cl)
	}
	cleaned = true
	if running(nrinetdPID, nrinetd) {
		t.Errorf("nrinetd (pid %d) still running after the clean-up", nrinetdPID)
	}
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, e := range exes {
		if p, err := os.Readlink(e); err == nil && strings.HasPrefix(p, dir+"/") {
			t.Errorf("%s (%s) still running after the clean-up", p, e)
		}
	}
	for _, id := range append(pods, a, b) {
		if ns := filepath.Join("/run/netns", "nrinet-"+id[:12]); exists(ns) {
			t.Errorf("%s left", ns)
		}
	}
	if testutil.LinkExists(bridge) {
		t.Errorf("bridge %s left", bridge)
	}
	if exists(dir) {
		t.Errorf("%s left", dir)
	}
	tables, err := podnetTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if !slices.Contains(tablesBefore, tb) {
			t.Errorf("nftables table %s left", tb)
		}
	}
}

// TestDemo_CleanRefusesOtherDirectories: -clean removes only a kept
// demo's directory.
func TestDemo_CleanRefusesOtherDirectories(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFile(t, dir, "keep-me", "x")
	_, err := readKept(dir)
	if err == nil || !strings.Contains(err.Error(), "not the directory of a demo run with -keep") || cli.ExitCode(err) != cli.ExitUsage {
		t.Errorf("readKept(%s) = %v (exit status %d), want a usage error", dir, err, cli.ExitCode(err))
	}
	if !exists(filepath.Join(dir, "keep-me")) {
		t.Errorf("-clean removed a directory that was not the demo's")
	}
}

// sessionID reads a process's session from /proc/PID/stat.
func sessionID(pid int) (int, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid pgrp session ...; comm may hold spaces.
	fields := strings.Fields(line[strings.LastIndexByte(line, ')')+1:])
	return strconv.Atoi(fields[3])
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
