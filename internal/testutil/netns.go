package testutil

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// NetNSDir is where iproute2 keeps named network namespaces.
const NetNSDir = "/var/run/netns"

// NewNetNS creates the named network namespace with `ip netns add`, brings
// its loopback up, and deletes it by name when the test ends. It returns
// the namespace's path.
func NewNetNS(t testing.TB, name string) string {
	t.Helper()
	Run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { DeleteNetNS(name) })
	return filepath.Join(NetNSDir, name)
}

// DeleteNetNS deletes a named network namespace; a missing one is fine.
func DeleteNetNS(name string) {
	exec.Command("ip", "netns", "del", name).Run()
}

// Run runs a command and fails the test with its output if it fails.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Ping sends one ICMP echo from inside the named namespace to addr and
// returns an error with ping's output if no reply came back.
func Ping(ns, addr string) error {
	out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "2", addr).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ping %s from netns %s: %v\n%s", addr, ns, err, out)
	}
	return nil
}

// LinkExists reports whether a network interface of that name exists in
// the host namespace.
func LinkExists(name string) bool {
	return exec.Command("ip", "link", "show", "dev", name).Run() == nil
}

// DeleteLink deletes a host network interface by name; a missing one is
// fine.
func DeleteLink(name string) {
	exec.Command("ip", "link", "del", "dev", name).Run()
}

// PodAddrs lists the global addresses of eth0 inside the named network
// namespace, without prefix lengths, sorted.
func PodAddrs(t testing.TB, ns string) []string {
	t.Helper()
	out := Run(t, "ip", "-n", ns, "-o", "addr", "show", "dev", "eth0", "scope", "global")
	var addrs []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		for i := range f {
			if (f[i] == "inet" || f[i] == "inet6") && i+1 < len(f) {
				addrs = append(addrs, strings.Split(f[i+1], "/")[0])
			}
		}
	}
	slices.Sort(addrs)
	return addrs
}

// NetNSNames lists the paths of the named network namespaces whose names
// match pattern (filepath.Match), such as nrinetd's sandboxes'
// "nrinet-*".
func NetNSNames(pattern string) []string {
	names, _ := filepath.Glob(filepath.Join(NetNSDir, pattern))
	return names
}

// ForeignNetNSGrace is how long a namespace that is not another test's
// may take to go (LeakedNetNS): the longest any package's tests keep a pod. make
// unit runs four packages' tests at a time, and those of several run
// nrinetd, whose sandboxes' namespaces share one prefix.
const ForeignNetNSGrace = 30 * time.Second

// LeakedNetNS returns the namespaces matching pattern that were not in
// before (NetNSNames earlier) and are still there grace later
// (ForeignNetNSGrace where other packages' tests may run beside): another
// test's come and go; one this test leaked stays. It returns at once when
// there is no new one.
func LeakedNetNS(pattern string, before []string, grace time.Duration) []string {
	var left []string
	Poll(grace, 20*time.Millisecond, func() error {
		left = left[:0]
		for _, n := range NetNSNames(pattern) {
			if !slices.Contains(before, n) {
				left = append(left, n)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("new namespaces %v", left)
		}
		return nil
	})
	return left
}
