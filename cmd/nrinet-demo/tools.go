package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
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

// checkTools makes sure the demo can run on h.
func checkTools(w io.Writer, h host, tools []tool) error {
	if !h.root {
		return errors.New("needs root (network namespaces, bridges, veths)")
	}
	return nil
}
