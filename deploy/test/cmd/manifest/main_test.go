package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// chartDir is nrinet's Helm chart.
const chartDir = "../../../helm/nrinet"

func TestRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "_output", "nrinet.yaml")
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		stdout []string // in standard output
		stderr string   // in standard error
		file   []string // in out
	}{
		{
			name: "defaults to stdout", status: 0,
			stdout: []string{"# nrinet's Helm chart (deploy/helm/nrinet) rendered by make manifest (docs/deploy.md).\n---\n", "kind: Namespace", "image: localhost/nrinet/nri-podnet:latest"},
		},
		{
			name: "a version to a file", args: []string{"-o", out, "-set-string", "image.tag=v0.1.0", "-set", "image.repository=registry.example.com/nrinet/nri-podnet"},
			file: []string{"with --set image.repository=registry.example.com/nrinet/nri-podnet --set-string image.tag=v0.1.0 (docs", "image: registry.example.com/nrinet/nri-podnet:v0.1.0"},
		},
		{name: "help", args: []string{"-help"}, status: 0, stdout: []string{"Usage: manifest -chart DIR", "-set-string"}},
		{name: "unknown flag", args: []string{"-values", "x"}, status: 2, stderr: "manifest: flag provided but not defined: -values (manifest -help lists the flags)\n"},
		{name: "an argument", args: []string{"nrinet"}, status: 2, stderr: `"nrinet"`},
		{name: "no values file", args: []string{"-f", filepath.Join(dir, "missing.yaml")}, status: 2, stderr: "missing.yaml"},
		{name: "values the chart refuses", args: []string{"-set", "mode=calico"}, status: 1, stderr: "/mode"},
		{name: "no chart", args: []string{"-chart", dir}, status: 1, stderr: dir},
		{name: "no -chart", args: []string{"-chart", ""}, status: 2, stderr: "-chart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := tc.args
			if !slices.Contains(args, "-chart") {
				args = append([]string{"-chart", chartDir}, args...)
			}
			if got := run(args, &stdout, &stderr); got != tc.status {
				t.Fatalf("run(%q): status %d, want %d; stderr:\n%s", args, got, tc.status, stderr.Bytes())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q does not say %q", stderr.Bytes(), tc.stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout does not have %q:\n%s", w, stdout.Bytes())
				}
			}
			if tc.file == nil {
				return
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.file {
				if !strings.Contains(string(b), w) {
					t.Errorf("%s does not have %q:\n%s", out, w, b)
				}
			}
			if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".nrinet.yaml.*")); len(leftovers) != 0 {
				t.Errorf("temporary files left: %q", leftovers)
			}
		})
	}
}
