package cli_test

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/cmd/internal/cli"
)

// newTest is a command with a checked string flag, a bool flag, a plain
// int flag and a deprecated name.
func newTest() (*cli.Command, *string) {
	c := cli.New("nri-test", "Tests.", "[flags]")
	var idx string
	c.StringVar(&idx, "idx", "10", "plugin `index`", func(s string) error {
		if len(s) != 2 {
			return errors.New("want two digits, 00 to 99")
		}
		return nil
	})
	c.Flags.Bool("kube", false, "a bool")
	c.Flags.Int("n", 1, "an int")
	c.Deprecate("index", "idx")
	return c, &idx
}

// TestCommand_Parse: -help is flag.ErrHelp; every other bad command line
// is a usage error (status 2) on one line, naming the flag and the
// value, with the hint to run -help.
func TestCommand_Parse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    string // the error; "" none
		wantIdx string
	}{
		{name: "defaults", wantIdx: "10"},
		{name: "a value", args: []string{"-idx", "20"}, wantIdx: "20"},
		{name: "the deprecated name", args: []string{"-index", "30"}, wantIdx: "30"},
		{name: "unknown flag", args: []string{"-nosuch"}, want: "flag provided but not defined: -nosuch (run 'nri-test -help' for usage)"},
		{name: "refused value", args: []string{"-idx", "abc"}, want: `-idx "abc": want two digits, 00 to 99 (run 'nri-test -help' for usage)`},
		{name: "refused value, deprecated name", args: []string{"-index", "abc"}, want: `-index "abc": want two digits, 00 to 99 (run 'nri-test -help' for usage)`},
		{name: "bad boolean", args: []string{"-kube=maybe"}, want: `-kube "maybe": want true or false (run 'nri-test -help' for usage)`},
		{name: "bad int", args: []string{"-n", "x"}, want: `-n "x": parse error (run 'nri-test -help' for usage)`},
		{name: "no value", args: []string{"-idx"}, want: "flag needs an argument: -idx (run 'nri-test -help' for usage)"},
		{name: "stray arguments", args: []string{"-idx", "20", "x", "y"}, want: `unexpected arguments ["x" "y"] (run 'nri-test -help' for usage)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, idx := newTest()
			err := c.Parse(tc.args)
			if tc.want == "" {
				if err != nil || *idx != tc.wantIdx {
					t.Errorf("Parse(%q) = %v, -idx %q; want nil, %q", tc.args, err, *idx, tc.wantIdx)
				}
				return
			}
			if err == nil || err.Error() != tc.want || cli.ExitCode(err) != cli.ExitUsage {
				t.Errorf("Parse(%q) = %v (exit status %d), want %q (2)", tc.args, err, cli.ExitCode(err), tc.want)
			}
		})
	}
	for _, help := range []string{"-help", "-h", "--help"} {
		c, _ := newTest()
		if err := c.Parse([]string{"-idx", "20", help}); !errors.Is(err, flag.ErrHelp) || cli.ExitCode(err) != 0 {
			t.Errorf("Parse(%s) = %v (exit status %d), want flag.ErrHelp (0)", help, err, cli.ExitCode(err))
		}
	}
}

// TestCommand_AllowArgs: a command that takes arguments gets them.
func TestCommand_AllowArgs(t *testing.T) {
	c, _ := newTest()
	c.AllowArgs()
	if err := c.Parse([]string{"-n", "2", "a", "b"}); err != nil || c.Flags.NArg() != 2 {
		t.Errorf("Parse = %v, %d arguments", err, c.Flags.NArg())
	}
}

// TestCommand_Report: -help's usage on stdout, status 0; an error on one
// line of stderr after the command's name, the lines of a joined error
// joined by "; ", with its status.
func TestCommand_Report(t *testing.T) {
	for _, tc := range []struct {
		name           string
		err            error
		status         int
		stdout, stderr string
	}{
		{"nil", nil, 0, "", ""},
		{"help", flag.ErrHelp, 0, "Usage:\n  nri-test [flags]\n\nTests.\n\nFlags:\n", ""},
		{"usage", cli.Usage(errors.Join(errors.New("a"), errors.New("b\n"))), 2, "", "nri-test: a; b\n"},
		{"wrapped usage", fmt.Errorf("x: %w", cli.Usage(errors.New("y"))), 2, "", "nri-test: x: y\n"},
		{"failure", errors.New("the bridge is gone"), 1, "", "nri-test: the bridge is gone\n"},
		{"own status", cli.WithStatus(3, errors.New("refused")), 3, "", "nri-test: refused\n"},
		{"usage of nil", cli.Usage(nil), 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTest()
			var stdout, stderr strings.Builder
			status := c.Report(tc.err, &stdout, &stderr)
			if status != tc.status || !strings.HasPrefix(stdout.String(), tc.stdout) || (tc.stdout == "") != (stdout.Len() == 0) || stderr.String() != tc.stderr {
				t.Errorf("Report(%v) = %d, stdout %q, stderr %q; want %d, %q, %q", tc.err, status, stdout.String(), stderr.String(), tc.status, tc.stdout, tc.stderr)
			}
		})
	}
}

// TestCommand_Usage: the layout every command's usage text has, with
// the deprecated names among the flags, naming their flag.
func TestCommand_Usage(t *testing.T) {
	c, _ := newTest()
	var b strings.Builder
	c.Usage(&b)
	want := `Usage:
  nri-test [flags]

Tests.

Flags:
  -idx index
    	plugin index (default 10)
  -index index
    	deprecated name of -idx index (default 10)
  -kube
    	a bool
  -n int
    	an int (default 1)
`
	if b.String() != want {
		t.Errorf("usage:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestCommand_Deprecated: one line for each deprecated name used, logged
// as a warning.
func TestCommand_Deprecated(t *testing.T) {
	c, _ := newTest()
	if err := c.Parse([]string{"-index", "20", "-n", "2"}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	c.WarnDeprecated(slog.New(slog.NewTextHandler(&b, nil)))
	if got := strings.Split(strings.TrimSpace(b.String()), "\n"); len(got) != 1 || !strings.Contains(got[0], `level=WARN msg="-index is deprecated: use -idx"`) {
		t.Errorf("log %q, want one warning", got)
	}
	c, _ = newTest()
	if err := c.Parse([]string{"-idx", "20"}); err != nil || len(c.Deprecated()) > 0 {
		t.Errorf("Parse = %v, deprecated %q; want none", err, c.Deprecated())
	}
}

// TestReadFile: errors name the flag and the file once, and are usage
// errors.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	if _, err := cli.ReadFile("config", missing); err == nil || err.Error() != fmt.Sprintf("-config %q: no such file or directory", missing) || cli.ExitCode(err) != cli.ExitUsage {
		t.Errorf("ReadFile(missing) = %v (exit status %d)", err, cli.ExitCode(err))
	}
	if _, err := cli.ReadFile("config", dir); err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("-config %q: ", dir)) || cli.ExitCode(err) != cli.ExitUsage {
		t.Errorf("ReadFile(a directory) = %v (exit status %d)", err, cli.ExitCode(err))
	}
	file := filepath.Join(dir, "x.json")
	if err := os.WriteFile(file, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := cli.ReadFile("config", file); err != nil || string(b) != "{}" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if err := cli.FileError("config", file, nil); err != nil {
		t.Errorf("FileError(nil) = %v", err)
	}
}
