package main

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// fakeHost is a machine with some commands, where apt-get (if present)
// installs packages by making their commands present.
type fakeHost struct {
	root      bool
	present   map[string]bool
	aptFails  bool
	noInstall bool // apt-get succeeds but installs nothing
	ran       []string
}

func (f *fakeHost) host() host {
	return host{
		root: f.root,
		lookPath: func(cmd string) (string, error) {
			if f.present[cmd] {
				return "/usr/bin/" + cmd, nil
			}
			return "", exec.ErrNotFound
		},
		run: func(name string, args ...string) error {
			f.ran = append(f.ran, strings.Join(append([]string{name}, args...), " "))
			if f.aptFails {
				return errors.New("exit status 100")
			}
			if f.noInstall || !slices.Contains(args, "install") {
				return nil
			}
			for _, t := range tools {
				if slices.Contains(args, t.pkg) {
					f.present[t.cmd] = true
				}
			}
			return nil
		},
	}
}

func TestCheckTools(t *testing.T) {
	for _, tc := range []struct {
		name     string
		f        *fakeHost
		ran      []string
		err      []string // what the error says, nil for none
		says     []string // what the demo prints
		installs bool
	}{
		{
			name: "everything there",
			f:    &fakeHost{root: true, present: map[string]bool{"ip": true, "ping": true, "apt-get": true}},
		},
		{
			name: "ping missing, apt-get there",
			f:    &fakeHost{root: true, present: map[string]bool{"ip": true, "apt-get": true}},
			ran:  []string{"apt-get update -qq", "apt-get install -y -qq iputils-ping"},
			says: []string{"iputils-ping", "ping between the pods", "apt-get"},
		},
		{
			name: "ip and ping missing, apt-get there",
			f:    &fakeHost{root: true, present: map[string]bool{"apt-get": true}},
			ran:  []string{"apt-get update -qq", "apt-get install -y -qq iproute2 iputils-ping"},
			says: []string{"iproute2", "iputils-ping"},
		},
		{
			name: "ping missing, no apt-get",
			f:    &fakeHost{root: true, present: map[string]bool{"ip": true}},
			err:  []string{"ping", "iputils-ping"},
		},
		{
			name: "apt-get fails",
			f:    &fakeHost{root: true, present: map[string]bool{"ip": true, "apt-get": true}, aptFails: true},
			ran:  []string{"apt-get update -qq"},
			err:  []string{"iputils-ping", "exit status 100"},
		},
		{
			name: "installed, still missing",
			f:    &fakeHost{root: true, present: map[string]bool{"ip": true, "apt-get": true}, noInstall: true},
			ran:  []string{"apt-get update -qq", "apt-get install -y -qq iputils-ping"},
			err:  []string{"ping", "iputils-ping"},
		},
		{
			name: "not root, ping missing",
			f:    &fakeHost{present: map[string]bool{"ip": true, "apt-get": true}},
			err:  []string{"root", "iputils-ping"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			err := checkTools(&out, tc.f.host(), tools)
			if !slices.Equal(tc.f.ran, tc.ran) {
				t.Errorf("ran %q, want %q", tc.f.ran, tc.ran)
			}
			switch {
			case tc.err == nil && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.err != nil && err == nil:
				t.Errorf("no error, want one saying %q", tc.err)
			}
			for _, s := range tc.err {
				if err != nil && !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			for _, s := range tc.says {
				if !strings.Contains(out.String(), s) {
					t.Errorf("the demo printed %q, which does not say %q", out.String(), s)
				}
			}
		})
	}
}
