package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// The exit statuses every nrinet command shares; a command may add its
// own with WithStatus (the plugins' 3, for a runtime they refuse).
const (
	// ExitFailure is every failure without a status of its own.
	ExitFailure = 1
	// ExitUsage is a usage or configuration error: a bad flag or
	// argument, a configuration file that cannot be read or is invalid.
	// The command has changed nothing on the node.
	ExitUsage = 2
)

// statusError is an error with the exit status it ends the command with.
type statusError struct {
	status int
	err    error
}

func (e statusError) Error() string { return e.err.Error() }
func (e statusError) Unwrap() error { return e.err }

// WithStatus marks err to end the command with exit status status; nil
// stays nil.
func WithStatus(status int, err error) error {
	if err == nil {
		return nil
	}
	return statusError{status: status, err: err}
}

// Usage marks err as a usage or configuration error (ExitUsage); nil
// stays nil.
func Usage(err error) error { return WithStatus(ExitUsage, err) }

// ExitCode is the exit status for a command's error: 0 for nil and for
// flag.ErrHelp (-help), the status WithStatus or Usage gave it, else
// ExitFailure.
func ExitCode(err error) int {
	var s statusError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &s):
		return s.status
	}
	return ExitFailure
}

// Report writes what a command's end needs, and returns its exit status
// (ExitCode): for flag.ErrHelp the usage text on stdout, for any other
// error one line on stderr, "NAME: ERROR", the lines of a multi-line
// error joined by "; ".
func (c *Command) Report(err error, stdout, stderr io.Writer) int {
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		c.Usage(stdout)
	default:
		fmt.Fprintf(stderr, "%s: %s\n", c.Name, OneLine(err.Error()))
	}
	return ExitCode(err)
}

// Main runs run, reports its end (Report) on the process's standard
// output and error, and exits with its status.
func (c *Command) Main(run func() error) {
	os.Exit(c.Report(run(), os.Stdout, os.Stderr))
}

// OneLine joins the lines of s with "; ", dropping empty ones.
func OneLine(s string) string {
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}
