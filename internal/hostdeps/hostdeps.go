package hostdeps

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Need is one thing a set needs of the machine: a command on PATH, or a
// file at one of Files (for what is not a command, or lives where root's
// PATH may not look), and the Debian package that has it.
type Need struct {
	// Cmd is looked up on PATH; "" when only Files tell.
	Cmd string
	// Files are checked when Cmd is not found: any of them existing
	// satisfies the need.
	Files []string
	// Pkg is the Debian package to install.
	Pkg string
	// Why says what it is for, completing "needed ...".
	Why string
}

// String names the need as a user knows it: its command, or its first
// file.
func (n Need) String() string {
	if n.Cmd != "" {
		return n.Cmd
	}
	return n.Files[0]
}

// Set is what one of nrinet's entry points needs.
type Set struct {
	// Name is the entry point, as the messages name it ("make test").
	Name string
	// Root is whether it cannot run at all without root.
	Root bool
	// Needs are checked in order.
	Needs []Need
	// NoServices keeps packages from starting their services while they
	// are installed (a policy-rc.d that says no): the images of the
	// Kubernetes e2e specs need nginx's binary, not a running nginx.
	NoServices bool
}

// The needs, each written once.
var (
	ip      = Need{Cmd: "ip", Pkg: "iproute2", Why: "to make and look into network namespaces, veths and bridges"}
	ping    = Need{Cmd: "ping", Pkg: "iputils-ping", Why: "to ping between pods' network namespaces"}
	gcc     = Need{Cmd: "gcc", Pkg: "gcc", Why: "for go test -race, which needs cgo"}
	libcDev = Need{Files: []string{"/usr/include/stdio.h"}, Pkg: "libc6-dev", Why: "for go test -race (cgo's C headers)"}
	git     = Need{Cmd: "git", Pkg: "git", Why: "for the version stamped into builds (hack/version.sh)"}
	tar     = Need{Cmd: "tar", Pkg: "tar", Why: "to unpack the release tarballs in their tests"}
	makeN   = Need{Cmd: "make", Pkg: "make", Why: "to run the Makefile's targets"}
)

// Demo is what make demo needs.
var Demo = Set{Name: "the demo", Root: true, Needs: []Need{ip, ping}}

// Test is what make test needs. Without root it still runs (the tests
// that need root skip).
var Test = Set{Name: "make test", Needs: []Need{makeN, ip, ping, gcc, libcDev, git, tar}}

// CI is what .ci/run needs: make test's needs and the end-to-end suites'.
var CI = Set{Name: ".ci/run", Root: true, NoServices: true, Needs: append(slices.Clone(Test.Needs),
	Need{Cmd: "runc", Pkg: "runc", Why: "to run the end-to-end suites' containers"},
	Need{Files: []string{"/bin/busybox"}, Pkg: "busybox-static", Why: "for the end-to-end suites' images (a static busybox)"},
	Need{Cmd: "conmon", Pkg: "conmon", Why: "for CRI-O's container monitor in the CRI-O suites"},
	Need{Files: []string{"/usr/lib/x86_64-linux-gnu/libc.a", "/usr/lib/aarch64-linux-gnu/libc.a"}, Pkg: "libc6-dev", Why: "to link CRI-O's pinns statically"},
	Need{Cmd: "nft", Files: []string{"/usr/sbin/nft"}, Pkg: "nftables", Why: "for the Kubernetes suite's look at nri-podnet's tables"},
	Need{Files: []string{"/usr/bin/curl"}, Pkg: "curl", Why: "for the images of Kubernetes' e2e specs"},
	Need{Files: []string{"/usr/bin/wget"}, Pkg: "wget", Why: "for the images of Kubernetes' e2e specs"},
	Need{Files: []string{"/usr/bin/dig"}, Pkg: "bind9-dnsutils", Why: "for the images of Kubernetes' e2e specs"},
	Need{Files: []string{"/usr/bin/nc.openbsd"}, Pkg: "netcat-openbsd", Why: "for the images of Kubernetes' e2e specs"},
	Need{Files: []string{"/usr/sbin/nginx"}, Pkg: "nginx", Why: "for the images of Kubernetes' e2e specs"},
	Need{Files: []string{"/etc/ssl/certs/ca-certificates.crt"}, Pkg: "ca-certificates", Why: "for the images of Kubernetes' e2e specs"},
)}

// Sets are the sets by the name internal/cmd/hostdeps takes.
var Sets = map[string]Set{"demo": Demo, "test": Test, "ci": CI}

// Host is what Check needs of the machine; tests give it a fake one.
type Host struct {
	Root     bool
	LookPath func(cmd string) (string, error)
	Exists   func(path string) bool
	// Run runs a command with its output on the terminal, in the
	// environment Check gives it (env, added to the process's).
	Run func(env []string, name string, args ...string) error
	// PolicyRCD is where Debian's policy-rc.d is (a hook that decides
	// whether installing a package may start its service).
	PolicyRCD string
}

// ThisHost is the machine the process runs on.
func ThisHost() Host {
	return Host{
		Root:     os.Geteuid() == 0,
		LookPath: exec.LookPath,
		Exists: func(p string) bool {
			_, err := os.Stat(p)
			return err == nil
		},
		Run: func(env []string, name string, args ...string) error {
			cmd := exec.Command(name, args...)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			cmd.Env = append(os.Environ(), env...)
			return cmd.Run()
		},
		PolicyRCD: "/usr/sbin/policy-rc.d",
	}
}

// Missing returns the needs of s that h lacks, in order.
func Missing(h Host, s Set) []Need {
	var missing []Need
	for _, n := range s.Needs {
		if !present(h, n) {
			missing = append(missing, n)
		}
	}
	return missing
}

func present(h Host, n Need) bool {
	if n.Cmd != "" {
		if _, err := h.LookPath(n.Cmd); err == nil {
			return true
		}
	}
	return slices.ContainsFunc(n.Files, h.Exists)
}

// Check makes sure h has what s needs. What is missing is installed with
// apt-get where h has it and is root, after one line per need on w saying
// which package and why; otherwise the error is one line naming each
// missing package. Without root, a set that needs root fails at once.
func Check(w io.Writer, h Host, s Set) error {
	missing := Missing(h, s)
	if s.Root && !h.Root {
		if len(missing) > 0 {
			return fmt.Errorf("%s needs root (network namespaces, bridges, veths); also missing: %s", s.Name, describe(missing))
		}
		return fmt.Errorf("%s needs root (network namespaces, bridges, veths)", s.Name)
	}
	if len(missing) == 0 {
		return nil
	}
	pkgs := packages(missing)
	if _, err := h.LookPath("apt-get"); err != nil {
		return fmt.Errorf("%s: missing %s: install %s with your package manager and run again", s.Name, describe(missing), strings.Join(pkgs, " "))
	}
	if !h.Root {
		return fmt.Errorf("%s: missing %s: run as root to have apt-get install %s, or install it yourself", s.Name, describe(missing), strings.Join(pkgs, " "))
	}
	for _, n := range missing {
		fmt.Fprintf(w, "%s: %s is missing: installing the package %s with apt-get (needed %s)\n", s.Name, n, n.Pkg, n.Why)
	}
	if err := install(h, s, pkgs); err != nil {
		return err
	}
	if still := Missing(h, s); len(still) > 0 {
		return fmt.Errorf("%s: still missing after apt-get install: %s", s.Name, describe(still))
	}
	return nil
}

func install(h Host, s Set, pkgs []string) (err error) {
	if s.NoServices && !h.Exists(h.PolicyRCD) {
		// Exit status 101: no service may start.
		if err := os.WriteFile(h.PolicyRCD, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
			return fmt.Errorf("%s: writing %s, so that packages start no service: %w", s.Name, h.PolicyRCD, err)
		}
		defer func() { err = errors.Join(err, os.Remove(h.PolicyRCD)) }()
	}
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	if err := h.Run(env, "apt-get", "update", "-qq"); err != nil {
		return fmt.Errorf("%s: apt-get update, to install %s: %w", s.Name, strings.Join(pkgs, " "), err)
	}
	if err := h.Run(env, "apt-get", append([]string{"install", "-y", "-qq"}, pkgs...)...); err != nil {
		return fmt.Errorf("%s: apt-get install %s: %w", s.Name, strings.Join(pkgs, " "), err)
	}
	return nil
}

// packages are the packages of needs, each once, in order.
func packages(needs []Need) []string {
	var pkgs []string
	for _, n := range needs {
		if !slices.Contains(pkgs, n.Pkg) {
			pkgs = append(pkgs, n.Pkg)
		}
	}
	return pkgs
}

// describe names missing needs with their packages and uses.
func describe(missing []Need) string {
	s := make([]string, len(missing))
	for i, n := range missing {
		s[i] = fmt.Sprintf("%s (package %s, needed %s)", n, n.Pkg, n.Why)
	}
	return strings.Join(s, ", ")
}
