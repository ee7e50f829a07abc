// Command hostdeps checks that this machine has the programs and Debian
// packages that one of nrinet's entry points needs, and installs what is
// missing with apt-get (saying what and why) or stops with one line
// naming each missing package (internal/hostdeps):
//
//	go run ./internal/cmd/hostdeps test   (make test runs it first)
//	go run ./internal/cmd/hostdeps ci     (.ci/run)
//	go run ./internal/cmd/hostdeps demo
//
// Exit status: 0 when everything is there, 1 when something is missing
// and could not be installed, 2 for a usage error.
package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/nrinet/nrinet/internal/hostdeps"
)

func main() {
	if len(os.Args) != 2 || hostdeps.Sets[os.Args[1]].Name == "" {
		var names []string
		for n := range hostdeps.Sets {
			names = append(names, n)
		}
		slices.Sort(names)
		fmt.Fprintf(os.Stderr, "usage: hostdeps %s\n", strings.Join(names, "|"))
		os.Exit(2)
	}
	if err := hostdeps.Check(os.Stdout, hostdeps.ThisHost(), hostdeps.Sets[os.Args[1]]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
