package ipam_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/ipam"
)

// crashChildEnv names the store path for a child process started by
// TestAllocator_crash; TestMain runs crashChild when it is set.
const crashChildEnv = "IPAM_TEST_CRASH_CHILD"

func crashConfig() ipam.Config {
	c := cfg("198.18.0.0/24", "2001:db8::/64")
	c.Exclude = prefixes("198.18.0.64/26")
	return c
}

// crashChild allocates and releases in a loop until it is killed. It
// prints "ready" once the first allocation is stored.
func crashChild(path string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	a, err := ipam.Open(path, crashConfig(), ipam.WithTimeout(5*time.Second))
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	// Owners left by an earlier child are released at random below, and
	// half of them right away, so the subnets never fill up.
	var n int
	if _, err := a.ReleaseExcept(ctx, func(string) bool { n++; return n%2 == 0 }); err != nil {
		fail(err)
	}
	live, err := a.Owners()
	if err != nil {
		fail(err)
	}
	for i := 0; ; i++ {
		owner := fmt.Sprintf("pod-%d-%d", os.Getpid(), i)
		if _, err := a.Allocate(ctx, owner); err != nil {
			fail(err)
		}
		live = append(live, owner)
		if i == 0 {
			fmt.Println("ready")
		}
		if len(live) > 100 {
			j := rand.IntN(len(live))
			if err := a.Release(ctx, live[j]); err != nil {
				fail(err)
			}
			live = append(live[:j], live[j+1:]...)
		}
	}
}

// TestAllocator_crash kills a process that allocates in a loop with
// SIGKILL at random moments, then checks that the store is consistent and
// every recorded owner holds a full set of addresses.
func TestAllocator_crash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	path := filepath.Join(t.TempDir(), "ipam.db")
	c := crashConfig()
	for round := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child did not start: %q, %v; stderr: %s", round, line, err, stderr.String())
		}
		time.Sleep(time.Duration(rand.IntN(40)+10) * time.Millisecond) // a random moment of the child's work: the crash under test
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err == nil || stderr.Len() > 0 {
			t.Fatalf("round %d: child exited before the kill (%v): %s", round, err, stderr.String())
		}

		a, err := ipam.Open(path, c)
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		if err := a.Check(); err != nil {
			a.Close()
			t.Fatalf("round %d: Check after kill: %v", round, err)
		}
		owners, err := a.Owners()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range owners {
			got, ok, err := a.Lookup(o)
			if err != nil || !ok || len(got) != len(c.Subnets) {
				t.Fatalf("round %d: Lookup(%q) = %v, %v, %v; want one address per subnet", round, o, got, ok, err)
			}
			for i, p := range got {
				if p.Masked() != c.Subnets[i] {
					t.Fatalf("round %d: owner %q holds %s, want an address of %s", round, o, p, c.Subnets[i])
				}
			}
		}
		t.Logf("round %d: %d owners after kill", round, len(owners))
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
