package hostdeps

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeHost is a machine with some commands and files, where apt-get (if
// present) installs packages by making their needs present.
type fakeHost struct {
	root      bool
	present   map[string]bool // commands and files
	aptFails  bool
	noInstall bool // apt-get succeeds but installs nothing
	ran       []string
	policyRCD string
	sawPolicy bool // policy-rc.d was there while apt-get install ran
}

func (f *fakeHost) host(s Set) Host {
	return Host{
		Root: f.root,
		LookPath: func(cmd string) (string, error) {
			if f.present[cmd] {
				return "/usr/bin/" + cmd, nil
			}
			return "", exec.ErrNotFound
		},
		Exists: func(p string) bool {
			if p == f.policyRCD {
				_, err := os.Stat(p)
				return err == nil
			}
			return f.present[p]
		},
		Run: func(env []string, name string, args ...string) error {
			f.ran = append(f.ran, strings.Join(append([]string{name}, args...), " "))
			if !slices.Contains(env, "DEBIAN_FRONTEND=noninteractive") {
				return errors.New("not noninteractive")
			}
			if f.aptFails {
				return errors.New("exit status 100")
			}
			if f.noInstall || !slices.Contains(args, "install") {
				return nil
			}
			if f.policyRCD != "" {
				_, err := os.Stat(f.policyRCD)
				f.sawPolicy = err == nil
			}
			for _, n := range s.Needs {
				if slices.Contains(args, n.Pkg) {
					f.present[n.String()] = true
				}
			}
			return nil
		},
		PolicyRCD: f.policyRCD,
	}
}

func TestCheck(t *testing.T) {
	all := map[string]bool{"apt-get": true}
	for _, n := range CI.Needs {
		all[n.String()] = true
	}
	without := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for k, v := range all {
			if !slices.Contains(names, k) {
				m[k] = v
			}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		set  Set
		f    *fakeHost
		ran  []string
		err  []string // what the error says, nil for none
		says []string // what Check prints
	}{
		{
			name: "everything there",
			set:  Demo,
			f:    &fakeHost{root: true, present: all},
		},
		{
			name: "ping missing, apt-get there",
			set:  Test,
			f:    &fakeHost{root: true, present: without("ping")},
			ran:  []string{"apt-get update -qq", "apt-get install -y -qq iputils-ping"},
			says: []string{"make test: ping is missing: installing the package iputils-ping with apt-get (needed to ping between"},
		},
		{
			name: "ip and ping missing, apt-get there",
			set:  Demo,
			f:    &fakeHost{root: true, present: without("ip", "ping")},
			ran:  []string{"apt-get update -qq", "apt-get install -y -qq iproute2 iputils-ping"},
			says: []string{"iproute2", "iputils-ping"},
		},
		{
			name: "one package for two needs, once",
			set:  CI,
			f:    &fakeHost{root: true, present: without("/usr/include/stdio.h", "/usr/lib/x86_64-linux-gnu/libc.a")},
			ran:  []string{"apt-get update -qq", "apt-get install -y -qq libc6-dev"},
		},
		{
			name: "ping missing, no apt-get",
			set:  Test,
			f:    &fakeHost{root: true, present: without("ping", "apt-get")},
			err:  []string{"make test: missing ping (package iputils-ping, needed to ping", "install iputils-ping with your package manager"},
		},
		{
			name: "apt-get fails",
			set:  Test,
			f:    &fakeHost{root: true, present: without("ping"), aptFails: true},
			ran:  []string{"apt-get update -qq"},
			err:  []string{"iputils-ping", "exit status 100"},
		},
		{
			name: "installed, still missing",
			set:  Test,
			f:    &fakeHost{root: true, present: without("ping"), noInstall: true},
			ran:  []string{"apt-get update -qq", "apt-get install -y -qq iputils-ping"},
			err:  []string{"still missing", "ping", "iputils-ping"},
		},
		{
			name: "demo not root, ping missing",
			set:  Demo,
			f:    &fakeHost{present: without("ping")},
			err:  []string{"root", "iputils-ping"},
		},
		{
			name: "demo not root",
			set:  Demo,
			f:    &fakeHost{present: all},
			err:  []string{"the demo needs root"},
		},
		{
			name: "tests not root, everything there: they run, skipping what needs root",
			set:  Test,
			f:    &fakeHost{present: all},
		},
		{
			name: "tests not root, ping missing: no install",
			set:  Test,
			f:    &fakeHost{present: without("ping")},
			err:  []string{"run as root", "iputils-ping"},
		},
		{
			name: "nft found in /usr/sbin off PATH",
			set:  CI,
			f:    &fakeHost{root: true, present: with(without("nft"), "/usr/sbin/nft")},
		},
		{
			name: "nft nowhere",
			set:  CI,
			f:    &fakeHost{root: true, present: without("nft")},
			ran:  []string{"apt-get update -qq", "apt-get install -y -qq nftables"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.present = maps(tc.f.present)
			tc.f.policyRCD = filepath.Join(t.TempDir(), "policy-rc.d")
			var out strings.Builder
			err := Check(&out, tc.f.host(tc.set), tc.set)
			if !slices.Equal(tc.f.ran, tc.ran) {
				t.Errorf("ran %q, want %q", tc.f.ran, tc.ran)
			}
			switch {
			case tc.err == nil && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.err != nil && err == nil:
				t.Errorf("no error, want one saying %q", tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
			for _, s := range tc.err {
				if err != nil && !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			for _, s := range tc.says {
				if !strings.Contains(out.String(), s) {
					t.Errorf("Check printed %q, which does not say %q", out.String(), s)
				}
			}
		})
	}
}

func with(m map[string]bool, names ...string) map[string]bool {
	m = maps(m)
	for _, n := range names {
		m[n] = true
	}
	return m
}

func maps(m map[string]bool) map[string]bool {
	c := make(map[string]bool, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// TestCheck_NoServices: a set that must not start services installs
// under a policy-rc.d that says no, and removes it after; one already
// there is kept.
func TestCheck_NoServices(t *testing.T) {
	for _, there := range []bool{false, true} {
		policy := filepath.Join(t.TempDir(), "policy-rc.d")
		if there {
			if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f := &fakeHost{root: true, present: map[string]bool{"apt-get": true}, policyRCD: policy}
		s := Set{Name: "x", NoServices: true, Needs: []Need{{Cmd: "nginx", Pkg: "nginx", Why: "for the images"}}}
		if err := Check(&strings.Builder{}, f.host(s), s); err != nil {
			t.Fatal(err)
		}
		if !f.sawPolicy {
			t.Errorf("there before: %v: no policy-rc.d while apt-get install ran", there)
		}
		b, err := os.ReadFile(policy)
		switch {
		case there && string(b) != "#!/bin/sh\nexit 0\n":
			t.Errorf("the policy-rc.d that was there is now %q, %v", b, err)
		case !there && err == nil:
			t.Errorf("policy-rc.d left behind")
		}
	}
}

// TestSets: every need names a package and a use, and what the demo
// and make test need, CI needs too.
func TestSets(t *testing.T) {
	for name, s := range Sets {
		for _, n := range s.Needs {
			if n.Pkg == "" || n.Why == "" || (n.Cmd == "" && len(n.Files) == 0) {
				t.Errorf("%s: %+v lacks a package, a use, or what to look for", name, n)
			}
		}
	}
	for _, s := range []Set{Demo, Test} {
		for _, n := range s.Needs {
			if !slices.ContainsFunc(CI.Needs, func(m Need) bool { return m.String() == n.String() }) {
				t.Errorf("%s needs %s, CI does not", s.Name, n)
			}
		}
	}
}
