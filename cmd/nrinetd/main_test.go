package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
)

// mainEnv makes the test binary run nrinetd's main instead of the tests.
const mainEnv = "NRINETD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMain_ExitStatus runs nrinetd (the test binary re-executed as it)
// with bad flags and configurations: status 2 and the reason for a usage
// or configuration error, 1 for an error while starting, 0 for -version;
// as the plugin commands (cmd/internal/pluginops).
func TestMain_ExitStatus(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string { return testutil.WriteFile(t, dir, name, content) }
	valid := file("valid.toml", "nri_socket = \"\"\nplugin_dir = \"\"\n")
	for _, tc := range []struct {
		name       string
		args       []string
		wantStatus int
		want       string // in stdout for status 0, else in stderr
	}{
		{"version", []string{"-version"}, 0, "nrinetd "},
		{"help", []string{"-help"}, 0, "Usage:\n  nrinetd [-config FILE] [flags]\n"},
		{"unknown flag", []string{"-no-such-flag"}, 2, "nrinetd: flag provided but not defined: -no-such-flag (run 'nrinetd -help' for usage)\n"},
		{"stray argument", []string{"-config", valid, "extra"}, 2, `unexpected arguments ["extra"]`},
		{"missing configuration file", []string{"-config", filepath.Join(dir, "missing.toml")}, 2, "missing.toml"},
		{"unknown key", []string{"-config", file("unknown.toml", `cri_sock = "/x"`)}, 2, `unknown configuration keys "cri_sock"`},
		{"HTTP address without a port", []string{"-config", file("metrics.toml", `http_address = "9464"`)}, 2, `http_address: address "9464": missing port`},
		{"bad log format flag", []string{"-config", valid, "-log-format", "xml"}, 2, `nrinetd: -log-format "xml": want text or json (run 'nrinetd -help' for usage)`},
		{"state directory that cannot be made", []string{"-config", valid, "-state-dir", "/proc/nrinetd-test-state"}, 1, "state directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tc.args...)
			cmd.Env = append(os.Environ(), mainEnv+"=1", "NOTIFY_SOCKET=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			status := testutil.RunStatus(t, cmd)
			out := stderr.String()
			if tc.wantStatus == 0 {
				out = stdout.String()
			}
			if status != tc.wantStatus || !strings.Contains(out, tc.want) {
				t.Fatalf("nrinetd %s: exit status %d, want %d with %q\nstdout: %s\nstderr: %s",
					strings.Join(tc.args, " "), status, tc.wantStatus, tc.want, stdout.String(), stderr.String())
			}
		})
	}
}
