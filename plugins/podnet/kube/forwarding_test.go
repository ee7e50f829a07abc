package kube

import (
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/nrinet/nrinet/internal/testutil"
)

func TestEnsureForwarding(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	// The sysctls are the calling thread's namespace's: run on a locked
	// thread in a fresh, unnamed namespace, which goes with its handle.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New() // switches the thread into it
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	defer func() {
		if err := netns.Set(orig); err != nil {
			panic("cannot return the thread to its namespace: " + err.Error())
		}
	}()
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	// A new namespace may inherit forwarding (net.core.devconf_inherit_init_net).
	for _, p := range []string{forwardIPv4, forwardIPv6} {
		if err := os.WriteFile(p, []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name        string
		v4, v6      bool
		wantChanged bool
		want4       string
		want6       string
	}{
		{"IPv4", true, false, true, "1", "0"},
		{"IPv4 again", true, false, false, "1", "0"},
		{"both", true, true, true, "1", "1"},
		{"none: nothing is turned off", false, false, false, "1", "1"},
	} {
		changed, err := ensureForwarding(slog.New(slog.DiscardHandler), step.v4, step.v6)
		if err != nil || changed != step.wantChanged {
			t.Errorf("%s: changed %v, err %v; want changed %v", step.name, changed, err, step.wantChanged)
		}
		if got4, got6 := read(forwardIPv4), read(forwardIPv6); got4 != step.want4 || got6 != step.want6 {
			t.Errorf("%s: ip_forward %s, ipv6 forwarding %s; want %s %s", step.name, got4, got6, step.want4, step.want6)
		}
	}
}
