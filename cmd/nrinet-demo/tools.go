package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// tool is a command the demo runs, the Debian/Ubuntu package that has it,
// and what the demo uses it for.
type tool struct {
	cmd, pkg, why string
}

// tools are the commands the demo needs besides go.
var tools = []tool{
	{"ip", "iproute2", "to look into the pods' network namespaces"},
	{"ping", "iputils-ping", "to ping between the pods"},
}

// host is what checkTools needs of the machine; tests replace it.
type host struct {
	root     bool
	lookPath func(cmd string) (string, error)
	// run runs a command with its output on the terminal.
	run func(name string, args ...string) error
}

// thisHost is the machine the demo runs on.
func thisHost() host {
	return host{
		root:     os.Geteuid() == 0,
		lookPath: exec.LookPath,
		run: func(name string, args ...string) error {
			cmd := exec.Command(name, args...)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			return cmd.Run()
		},
	}
}

// checkTools makes sure the demo can run on h: it needs root and every
// command of tools. Missing commands are installed with apt-get, where
// there is one, after saying which packages and why; elsewhere the error
// names the packages to install.
func checkTools(w io.Writer, h host, tools []tool) error {
	var missing []tool
	for _, t := range tools {
		if _, err := h.lookPath(t.cmd); err != nil {
			missing = append(missing, t)
		}
	}
	if !h.root {
		if len(missing) > 0 {
			return fmt.Errorf("needs root (network namespaces, bridges, veths); also missing: %s", describe(missing))
		}
		return errors.New("needs root (network namespaces, bridges, veths)")
	}
	if len(missing) == 0 {
		return nil
	}
	pkgs := make([]string, len(missing))
	for i, t := range missing {
		pkgs[i] = t.pkg
	}
	if _, err := h.lookPath("apt-get"); err != nil {
		return fmt.Errorf("missing %s: install %s with your package manager and run the demo again", describe(missing), strings.Join(pkgs, " "))
	}
	for _, t := range missing {
		fmt.Fprintf(w, "nrinet-demo: %s is missing: installing the package %s with apt-get (the demo needs %s %s)\n", t.cmd, t.pkg, t.cmd, t.why)
	}
	if err := h.run("apt-get", "update", "-qq"); err != nil {
		return fmt.Errorf("apt-get update, to install %s: %w", strings.Join(pkgs, " "), err)
	}
	if err := h.run("apt-get", append([]string{"install", "-y", "-qq"}, pkgs...)...); err != nil {
		return fmt.Errorf("apt-get install %s: %w", strings.Join(pkgs, " "), err)
	}
	var still []tool
	for _, t := range missing {
		if _, err := h.lookPath(t.cmd); err != nil {
			still = append(still, t)
		}
	}
	if len(still) > 0 {
		return fmt.Errorf("still missing after apt-get install: %s", describe(still))
	}
	return nil
}

// describe names missing commands with their packages and uses.
func describe(missing []tool) string {
	s := make([]string, len(missing))
	for i, t := range missing {
		s[i] = fmt.Sprintf("%s (package %s, %s)", t.cmd, t.pkg, t.why)
	}
	return strings.Join(s, ", ")
}
