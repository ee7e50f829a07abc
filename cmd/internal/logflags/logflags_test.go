package logflags_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/cmd/internal/logflags"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		debug    bool // a debug message is written
		json     bool
		parseErr string // Parse refuses the command line with this
	}{
		{name: "defaults"},
		{name: "debug", args: []string{"-log-level", "debug"}, debug: true},
		{name: "json", args: []string{"-log-format", "json", "-log-level", "DEBUG"}, debug: true, json: true},
		{name: "bad level", args: []string{"-log-level", "loud"}, parseErr: `-log-level "loud": want debug, info, warn or error`},
		{name: "bad format", args: []string{"-log-format", "xml"}, parseErr: `-log-format "xml": want text or json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cli.New("x", "")
			f := logflags.Add(c)
			err := c.Parse(tc.args)
			if tc.parseErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.parseErr) || cli.ExitCode(err) != cli.ExitUsage {
					t.Fatalf("Parse = %v (exit status %d), want a usage error with %q", err, cli.ExitCode(err), tc.parseErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			log, err := f.Logger(&buf)
			if err != nil {
				t.Fatal(err)
			}
			log.Debug("dbg")
			log.Info("inf", "k", "v")
			out := buf.String()
			if got := strings.Contains(out, "dbg"); got != tc.debug {
				t.Errorf("debug message written: %v, want %v:\n%s", got, tc.debug, out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var v map[string]any
			if isJSON := json.Unmarshal([]byte(lines[len(lines)-1]), &v) == nil; isJSON != tc.json {
				t.Errorf("JSON output: %v, want %v:\n%s", isJSON, tc.json, out)
			}
		})
	}
}

// TestFlags_Logger: flags set without Parse are checked by Logger, which
// names the flag and the value.
func TestFlags_Logger(t *testing.T) {
	for _, tc := range []struct {
		f    logflags.Flags
		want string
	}{
		{logflags.Flags{Level: "loud", Format: "text"}, `-log-level "loud"`},
		{logflags.Flags{Level: "info", Format: "xml"}, `-log-format "xml": want text or json`},
	} {
		if _, err := tc.f.Logger(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Logger() = %v, want an error with %q", tc.f, err, tc.want)
		}
	}
}
