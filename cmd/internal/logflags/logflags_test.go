package logflags_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/cmd/internal/logflags"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		debug   bool // a debug message is written
		json    bool
		wantErr string
	}{
		{name: "defaults"},
		{name: "debug", args: []string{"-log-level", "debug"}, debug: true},
		{name: "json", args: []string{"-log-format", "json", "-log-level", "DEBUG"}, debug: true, json: true},
		{name: "bad level", args: []string{"-log-level", "loud"}, wantErr: `-log-level "loud"`},
		{name: "bad format", args: []string{"-log-format", "xml"}, wantErr: `-log-format "xml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			f := logflags.Add(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			log, err := f.Logger(&buf)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Logger() = %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
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
