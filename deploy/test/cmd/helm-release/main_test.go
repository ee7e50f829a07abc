package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/nrinet/nrinet/deploy/test/helmchart"
)

// chartDir is nrinet's Helm chart.
const chartDir = "../../../helm/nrinet"

// TestRun runs the command with flags it refuses, and against a cluster
// that is not there (the API server's address refuses connections); the
// suite test/kube-e2e (TestHelm) runs it against a real one.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	// A kubeconfig whose server refuses connections: a port of
	// 127.0.0.1 that was listened on, then closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := "https://" + l.Addr().String()
	l.Close()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: `+server+`
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: t
contexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cluster := []string{"-kubeconfig", kubeconfig, "-namespace", "kube-system"}
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		stdout string // in standard output
		stderr string // in standard error
	}{
		{name: "help", args: []string{"-help"}, stdout: "Usage: helm-release install|upgrade|uninstall|status"},
		{name: "help of a command", args: []string{"status", "-help"}, stdout: "-kubeconfig"},
		{name: "no command", status: exitUsage, stderr: "want a command, one of install, upgrade, uninstall, status"},
		{name: "unknown command", args: []string{"rollback"}, status: exitUsage, stderr: `unknown command "rollback"`},
		{name: "unknown flag", args: []string{"status", "-chart", chartDir}, status: exitUsage, stderr: "helm-release status: flag provided but not defined: -chart"},
		{name: "an argument", args: append([]string{"uninstall", "nrinet"}, cluster...), status: exitUsage, stderr: `arguments ["nrinet" "-kubeconfig"`},
		{name: "no -kubeconfig", args: []string{"status", "-namespace", "kube-system"}, status: exitUsage, stderr: "-kubeconfig"},
		{name: "no -namespace", args: []string{"status", "-kubeconfig", kubeconfig}, status: exitUsage, stderr: "-namespace"},
		{name: "no -chart", args: append([]string{"install"}, cluster...), status: exitUsage, stderr: "-chart"},
		{
			name: "no values file", args: append([]string{"install", "-chart", chartDir, "-f", filepath.Join(dir, "missing.yaml")}, cluster...),
			status: exitUsage, stderr: "missing.yaml",
		},
		{name: "no kubeconfig file", args: []string{"status", "-kubeconfig", filepath.Join(dir, "none"), "-namespace", "kube-system"}, status: exitFailed, stderr: "none: no such file"},
		{name: "install, no cluster", args: append([]string{"install", "-chart", chartDir}, cluster...), status: exitFailed, stderr: l.Addr().String()},
		{name: "upgrade, no cluster", args: append([]string{"upgrade", "-chart", chartDir, "-reuse-values"}, cluster...), status: exitFailed, stderr: l.Addr().String()},
		{name: "uninstall, no cluster", args: append([]string{"uninstall", "-wait"}, cluster...), status: exitFailed, stderr: "helm-release uninstall nrinet (namespace kube-system): kubernetes cluster unreachable"},
		{name: "status, no cluster", args: append([]string{"status", "-release", "other"}, cluster...), status: exitFailed, stderr: "helm-release status other (namespace kube-system)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(context.Background(), tc.args, &stdout, &stderr); got != tc.status {
				t.Fatalf("run(%q): status %d, want %d; stderr:\n%s", tc.args, got, tc.status, stderr.Bytes())
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout %q does not say %q", stdout.Bytes(), tc.stdout)
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q does not say %q", stderr.Bytes(), tc.stderr)
			}
			if tc.status != 0 && stdout.Len() != 0 && !strings.Contains(tc.name, "help") {
				t.Errorf("stdout %q after a failure", stdout.Bytes())
			}
		})
	}
}

// TestDescribe describes a release whose manifest is the chart's with
// its default values, rendered as Helm installs it: the objects of the
// manifest, in Helm's install order.
func TestDescribe(t *testing.T) {
	manifest, err := helmchart.Render(context.Background(), chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	rel := &release.Release{Name: "nrinet", Namespace: "kube-system", Version: 2,
		Info: &release.Info{Status: "deployed"}, Chart: ch, Manifest: manifest}
	got, err := describe(rel)
	if err != nil {
		t.Fatal(err)
	}
	want := &Release{Name: "nrinet", Namespace: "kube-system", Revision: 2, Status: "deployed",
		Chart: "nrinet-" + ch.Metadata.Version, AppVersion: "latest", Objects: []Object{
			{"v1", "Namespace", "", "nrinet-system"},
			{"v1", "ServiceAccount", "nrinet-system", "nri-podnet"},
			{"v1", "ConfigMap", "nrinet-system", "nri-podnet-config"},
			{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "nri-podnet"},
			{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "nri-podnet"},
			{"apps/v1", "DaemonSet", "nrinet-system", "nri-podnet"},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("describe:\n%+v\nwant\n%+v", got, want)
	}
	rel.Chart = nil // a release without its chart
	if got, err := describe(rel); err != nil || got.Chart != "" || len(got.Objects) != len(want.Objects) {
		t.Errorf("describe without the chart: %+v, %v", got, err)
	}
	if _, err := describe("not a release"); err == nil {
		t.Error("describe of a string: no error")
	}
}
