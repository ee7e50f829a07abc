package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/nrinet/nrinet/internal/testutil"
)

// The commands TestCommands_BadStart builds and runs.
const (
	nrinetd    = "nrinetd"
	nriPodnet  = "nri-podnet"
	nriCNI     = "nri-cni"
	nrinetDemo = "nrinet-demo"
)

// startCase is one command line of TestCommands_BadStart. In args and
// files, ROOT stands for the case's temporary directory, where every
// configuration puts its state directory (ROOT/state) and sockets
// (ROOT/run): a command that got past its checks would create them.
type startCase struct {
	cmd, name string
	args      []string
	files     map[string]string // ROOT/etc/NAME: content
	status    int
	// stderr are parts of the one line on standard error (status 2):
	// the flag or key and the value.
	stderr []string
	// help: the usage text on standard output, nothing on standard error.
	help bool
	// kernel: the bridges nrstart0 and nrinet0 and nri-podnet's nftables
	// tables are made in the namespace first (-uninstall's); removes: the
	// command is to remove nrstart0 and the tables (a good -uninstall),
	// else to leave them all.
	kernel, removes bool
}

// Configurations for the cases: good ones, whose state and sockets are
// under ROOT, and bad ones.
var startFiles = map[string]string{
	"podnet.json":           `{"bridge": "nrstart0", "subnets": ["198.18.70.0/24"], "stateDir": "ROOT/state"}`,
	"podnet-malformed.json": `{"bridge": "nrstart0", "subnets": [`,
	"podnet-unknown.json":   `{"bridg": "nrstart0", "subnets": ["198.18.70.0/24"], "stateDir": "ROOT/state"}`,
	"podnet-cidr.json":      `{"bridge": "nrstart0", "subnets": ["198.18.70.0/33"], "stateDir": "ROOT/state"}`,
	"podnet-kube.json":      `{"bridge": "nrstart0", "stateDir": "ROOT/state"}`,
	"podnet-kube-cidr.json": `{"bridge": "nrstart0", "stateDir": "ROOT/state", "exclude": ["198.18.70.0/33"]}`,
	"kubeconfig-malformed":  "apiVersion: v1\nclusters: [\n",
	"cni.json":              `{"confDir": "ROOT/net.d", "binDirs": ["ROOT/bin"], "cacheDir": "ROOT/state"}`,
	"cni-malformed.json":    `{"confDir": `,
	"cni-unknown.json":      `{"confDirs": "ROOT/net.d"}`,
	"cni-relative.json":     `{"confDir": "net.d"}`,
	"nrinetd.toml": `cri_socket = "ROOT/run/cri.sock"
nri_socket = "ROOT/run/nri.sock"
plugin_dir = "ROOT/plugins"
plugin_config_dir = "ROOT/conf.d"
state_dir = "ROOT/state"
`,
	"nrinetd-malformed.toml": "state_dir = \"ROOT/state\"\ncri_socket = \n",
	"nrinetd-unknown.toml":   "state_dir = \"ROOT/state\"\ncri_sock = \"ROOT/run/cri.sock\"\n",
	"nrinetd-family.toml":    "state_dir = \"ROOT/state\"\ncri_socket = \"ROOT/run/cri.sock\"\nfamily_preference = \"ipv5\"\n",
	"nrinetd-required.toml":  "state_dir = \"ROOT/state\"\ncri_socket = \"ROOT/run/cri.sock\"\nrequired_network_plugins = [\"two words\"]\n",
	"nrinetd-http.toml":      "state_dir = \"ROOT/state\"\ncri_socket = \"ROOT/run/cri.sock\"\nhttp_address = \"9464\"\n",
}

// startCases: for every command, -help and -h, and each kind of bad
// command line and configuration it can be given.
func startCases() []startCase {
	podnet := []string{"-config", "ROOT/etc/podnet.json", "-socket", "ROOT/run/nri.sock"}
	cni := []string{"-config", "ROOT/etc/cni.json", "-socket", "ROOT/run/nri.sock"}
	daemon := []string{"-config", "ROOT/etc/nrinetd.toml"}
	kube := []string{"-kube", "-node-name", "n1", "-network-policy=false", "-socket", "ROOT/run/nri.sock"}
	with := func(base []string, more ...string) []string { return append(slices.Clone(base), more...) }
	cases := []startCase{
		{cmd: nriPodnet, name: "bad index", args: with(podnet, "-idx", "abc"), status: 2, stderr: []string{`-idx "abc": want two digits, 00 to 99`, "run 'nri-podnet -help' for usage"}},
		{cmd: nriPodnet, name: "bad name", args: with(podnet, "-name", "a b"), status: 2, stderr: []string{`-name "a b"`}},
		{cmd: nriPodnet, name: "bad log level", args: with(podnet, "-log-level", "loud"), status: 2, stderr: []string{`-log-level "loud"`}},
		{cmd: nriPodnet, name: "bad HTTP address", args: with(podnet, "-http-address", "9465"), status: 2, stderr: []string{`-http-address "9465": missing port`}},
		{cmd: nriPodnet, name: "bad HTTP address, deprecated name", args: with(podnet, "-health-address", "9465"), status: 2, stderr: []string{`-health-address "9465": missing port`}},
		{cmd: nriPodnet, name: "bad cluster CIDR", args: with(podnet, "-cluster-cidr", "198.18.0.0/33"), status: 2, stderr: []string{`-cluster-cidr "198.18.0.0/33"`}},
		{cmd: nriPodnet, name: "missing config file", args: []string{"-config", "ROOT/etc/missing.json", "-socket", "ROOT/run/nri.sock"}, status: 2, stderr: []string{`-config "ROOT/etc/missing.json": no such file or directory`}},
		{cmd: nriPodnet, name: "malformed config", args: []string{"-config", "ROOT/etc/podnet-malformed.json"}, status: 2, stderr: []string{`-config "ROOT/etc/podnet-malformed.json"`, "unexpected EOF"}},
		{cmd: nriPodnet, name: "unknown key", args: []string{"-config", "ROOT/etc/podnet-unknown.json"}, status: 2, stderr: []string{`-config "ROOT/etc/podnet-unknown.json"`, `unknown field "bridg"`}},
		{cmd: nriPodnet, name: "bad CIDR", args: []string{"-config", "ROOT/etc/podnet-cidr.json"}, status: 2, stderr: []string{`-config "ROOT/etc/podnet-cidr.json"`, `subnets[0] "198.18.70.0/33"`}},
		{cmd: nriPodnet, name: "no configuration", args: []string{"-socket", "ROOT/run/nri.sock"}, status: 2, stderr: []string{"no configuration: give -config or -kube"}},
		{cmd: nriPodnet, name: "-kube: missing kubeconfig", args: with(kube, "-config", "ROOT/etc/podnet-kube.json", "-kubeconfig", "ROOT/etc/missing"), status: 2, stderr: []string{`-kubeconfig "ROOT/etc/missing": no such file or directory`}},
		{cmd: nriPodnet, name: "-kube: malformed kubeconfig", args: with(kube, "-config", "ROOT/etc/podnet-kube.json", "-kubeconfig", "ROOT/etc/kubeconfig-malformed"), status: 2, stderr: []string{`-kubeconfig "ROOT/etc/kubeconfig-malformed"`}},
		{cmd: nriPodnet, name: "-kube: no in-cluster configuration", args: with(kube, "-config", "ROOT/etc/podnet-kube.json"), status: 2, stderr: []string{"-kube without -kubeconfig needs the in-cluster configuration", "KUBERNETES_SERVICE_HOST"}},
		{cmd: nriPodnet, name: "-kube: no node name", args: []string{"-kube", "-config", "ROOT/etc/podnet-kube.json", "-kubeconfig", "ROOT/etc/missing"}, status: 2, stderr: []string{"-kube needs this node's name"}},
		{cmd: nriPodnet, name: "-kube: subnets in the file", args: with(kube, "-config", "ROOT/etc/podnet.json", "-kubeconfig", "ROOT/etc/missing"), status: 2, stderr: []string{`-config "ROOT/etc/podnet.json": sets subnets ["198.18.70.0/24"]`}},
		{cmd: nriPodnet, name: "-kube: bad CIDR in the file", args: with(kube, "-config", "ROOT/etc/podnet-kube-cidr.json", "-kubeconfig", "ROOT/etc/missing"), status: 2, stderr: []string{`-config "ROOT/etc/podnet-kube-cidr.json"`, `exclude[0] "198.18.70.0/33"`}},
		{cmd: nriPodnet, name: "-uninstall: unknown key", args: []string{"-uninstall", "-config", "ROOT/etc/podnet-unknown.json"}, kernel: true, status: 2, stderr: []string{`-config "ROOT/etc/podnet-unknown.json"`, `unknown field "bridg"`}},
		{cmd: nriPodnet, name: "-uninstall: bad CIDR", args: []string{"-uninstall", "-config", "ROOT/etc/podnet-cidr.json"}, kernel: true, status: 2, stderr: []string{`subnets[0] "198.18.70.0/33"`}},
		{cmd: nriPodnet, name: "-uninstall: bad CIDR in a -kube file", args: []string{"-uninstall", "-config", "ROOT/etc/podnet-kube-cidr.json"}, kernel: true, status: 2, stderr: []string{`exclude[0] "198.18.70.0/33"`}},
		{cmd: nriPodnet, name: "-uninstall: malformed config", args: []string{"-uninstall", "-config", "ROOT/etc/podnet-malformed.json"}, kernel: true, status: 2, stderr: []string{`-config "ROOT/etc/podnet-malformed.json"`, "unexpected EOF"}},
		{cmd: nriPodnet, name: "-uninstall: missing config file", args: []string{"-uninstall", "-config", "ROOT/etc/missing.json"}, kernel: true, status: 2, stderr: []string{`-config "ROOT/etc/missing.json": no such file or directory`}},
		{cmd: nriPodnet, name: "-uninstall: bad index", args: []string{"-uninstall", "-config", "ROOT/etc/podnet.json", "-idx", "abc"}, kernel: true, status: 2, stderr: []string{`-idx "abc"`}},
		// The controls: a good -uninstall removes what the bad ones left.
		{cmd: nriPodnet, name: "-uninstall: good config", args: []string{"-uninstall", "-config", "ROOT/etc/podnet.json"}, kernel: true, removes: true},
		{cmd: nriPodnet, name: "-uninstall: good -kube config", args: []string{"-uninstall", "-config", "ROOT/etc/podnet-kube.json"}, kernel: true, removes: true},

		{cmd: nriCNI, name: "bad index", args: with(cni, "-idx", "abc"), status: 2, stderr: []string{`-idx "abc": want two digits, 00 to 99`, "run 'nri-cni -help' for usage"}},
		{cmd: nriCNI, name: "bad name", args: with(cni, "-name", "a/b"), status: 2, stderr: []string{`-name "a/b"`}},
		{cmd: nriCNI, name: "bad log format", args: with(cni, "-log-format", "xml"), status: 2, stderr: []string{`-log-format "xml": want text or json`}},
		{cmd: nriCNI, name: "bad HTTP address, deprecated name", args: with(cni, "-health-address", "256.0.0.1:1"), status: 2, stderr: []string{`-health-address "256.0.0.1:1"`}},
		{cmd: nriCNI, name: "missing config file", args: []string{"-config", "ROOT/etc/missing.json"}, status: 2, stderr: []string{`-config "ROOT/etc/missing.json": no such file or directory`}},
		{cmd: nriCNI, name: "malformed config", args: []string{"-config", "ROOT/etc/cni-malformed.json"}, status: 2, stderr: []string{`-config "ROOT/etc/cni-malformed.json"`, "unexpected EOF"}},
		{cmd: nriCNI, name: "unknown key", args: []string{"-config", "ROOT/etc/cni-unknown.json"}, status: 2, stderr: []string{`unknown field "confDirs"`}},
		{cmd: nriCNI, name: "bad value", args: []string{"-config", "ROOT/etc/cni-relative.json"}, status: 2, stderr: []string{`confDir "net.d" is not an absolute path`}},

		{cmd: nrinetd, name: "bad duration", args: with(daemon, "-status-timeout", "soon"), status: 2, stderr: []string{`-status-timeout "soon"`}},
		{cmd: nrinetd, name: "relative state directory", args: with(daemon, "-state-dir", "state"), status: 2, stderr: []string{`-state-dir "state": not an absolute path`}},
		{cmd: nrinetd, name: "bad plugin name", args: with(daemon, "-required-network-plugins", "podnet,a b"), status: 2, stderr: []string{`-required-network-plugins "podnet,a b": "a b"`}},
		{cmd: nrinetd, name: "bad HTTP address", args: with(daemon, "-http-address", "9464"), status: 2, stderr: []string{`-http-address "9464": missing port`}},
		{cmd: nrinetd, name: "bad HTTP address, deprecated name", args: with(daemon, "-metrics-address", "9464"), status: 2, stderr: []string{`-metrics-address "9464": missing port`}},
		{cmd: nrinetd, name: "missing config file", args: []string{"-config", "ROOT/etc/missing.toml"}, status: 2, stderr: []string{`-config "ROOT/etc/missing.toml": no such file or directory`}},
		{cmd: nrinetd, name: "malformed config", args: []string{"-config", "ROOT/etc/nrinetd-malformed.toml"}, status: 2, stderr: []string{`-config "ROOT/etc/nrinetd-malformed.toml"`, "line 2"}},
		{cmd: nrinetd, name: "unknown key", args: []string{"-config", "ROOT/etc/nrinetd-unknown.toml"}, status: 2, stderr: []string{`-config "ROOT/etc/nrinetd-unknown.toml": unknown configuration keys "cri_sock"`}},
		{cmd: nrinetd, name: "bad value", args: []string{"-config", "ROOT/etc/nrinetd-family.toml"}, status: 2, stderr: []string{`family_preference "ipv5"`}},
		{cmd: nrinetd, name: "bad plugin name in the file", args: []string{"-config", "ROOT/etc/nrinetd-required.toml"}, status: 2, stderr: []string{`required_network_plugins "two words"`}},
		{cmd: nrinetd, name: "bad HTTP address in the file", args: []string{"-config", "ROOT/etc/nrinetd-http.toml"}, status: 2, stderr: []string{`http_address: address "9464": missing port`}},

		{cmd: nrinetDemo, name: "bad boolean", args: []string{"-keep=maybe"}, status: 2, stderr: []string{`-keep "maybe": want true or false`}},
		{cmd: nrinetDemo, name: "-clean: missing directory", args: []string{"-clean", "ROOT/kept"}, status: 2, stderr: []string{`-clean "ROOT/kept": not the directory of a demo run with -keep`}},
		{cmd: nrinetDemo, name: "-clean: not a kept demo's directory", args: []string{"-clean", "ROOT/etc"}, status: 2, stderr: []string{`-clean "ROOT/etc": not the directory of a demo run with -keep`}},
	}
	for _, cmd := range []string{nrinetd, nriPodnet, nriCNI, nrinetDemo} {
		good := map[string][]string{nrinetd: daemon, nriPodnet: podnet, nriCNI: cni, nrinetDemo: nil}[cmd]
		cases = append(cases,
			startCase{cmd: cmd, name: "-help", args: with(good, "-help"), help: true},
			startCase{cmd: cmd, name: "-h", args: []string{"-h"}, help: true},
			startCase{cmd: cmd, name: "unknown flag", args: with(good, "-nosuch"), status: 2, stderr: []string{"-nosuch", "(run '" + cmd + " -help' for usage)"}},
			startCase{cmd: cmd, name: "stray argument", args: with(good, "extra"), status: 2, stderr: []string{`unexpected arguments ["extra"]`, "(run '" + cmd + " -help' for usage)"}},
		)
	}
	return cases
}

// TestCommands_BadStart runs the four commands, built as make build
// builds them, with every kind of bad command line and configuration,
// each in a network namespace and a directory of its own: each exits with
// status 2 and one line on standard error naming the flag or the file and
// key, and the value, before it does anything: it leaves the namespace as
// it was (no link, no nftables table made or removed) and creates no
// file (no state directory, no socket). -help and -h print the usage on
// standard output and exit 0; a good -uninstall, the control, removes
// what the bad ones leave.
func TestCommands_BadStart(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	bin := t.TempDir()
	if err := testutil.GoBuild("../..", bin, nil, "./"+nrinetd, "./"+nriPodnet, "./"+nriCNI, "./"+nrinetDemo); err != nil {
		t.Fatal(err)
	}
	for i, tc := range startCases() {
		t.Run(tc.cmd+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for _, d := range []string{"etc", "tmp", "work"} {
				if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for name, content := range startFiles {
				testutil.WriteFile(t, filepath.Join(root, "etc"), name, strings.ReplaceAll(content, "ROOT", root))
			}
			before := listFiles(t, root)
			ns := fmt.Sprintf("nrcli-%d-%d", os.Getpid(), i)
			nsPath := testutil.NewNetNS(t, ns)
			if tc.kernel {
				makeKernelState(t, ns, nsPath)
			}
			kernelBefore := kernelState(t, ns, nsPath)

			args := make([]string, len(tc.args))
			for j, a := range tc.args {
				args[j] = strings.ReplaceAll(a, "ROOT", root)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, filepath.Join(bin, tc.cmd)}, args...)...)
			cmd.Dir = filepath.Join(root, "work")
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(root, "work"), "TMPDIR=" + filepath.Join(root, "tmp")}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			status := testutil.RunStatus(t, cmd)
			if ctx.Err() != nil {
				t.Fatalf("%s %s: still running after 20 s\nstderr:\n%s", tc.cmd, strings.Join(args, " "), stderr.String())
			}

			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			switch {
			case tc.help:
				if status != 0 || !strings.HasPrefix(stdout.String(), "Usage:\n  "+tc.cmd+" ") || !strings.Contains(stdout.String(), "\nFlags:\n  -") || stderr.Len() > 0 {
					t.Errorf("%s %s: exit status %d\nstdout:\n%s\nstderr:\n%s\nwant status 0 and the usage on standard output only",
						tc.cmd, strings.Join(args, " "), status, stdout.String(), stderr.String())
				}
			case tc.status != 0:
				ok := status == tc.status && len(lines) == 1 && strings.HasPrefix(lines[0], tc.cmd+": ") && stdout.Len() == 0
				for _, w := range tc.stderr {
					ok = ok && strings.Contains(lines[0], strings.ReplaceAll(w, "ROOT", root))
				}
				if !ok {
					t.Errorf("%s %s: exit status %d\nstdout:\n%s\nstderr:\n%s\nwant status %d and one line on standard error with %q",
						tc.cmd, strings.Join(args, " "), status, stdout.String(), stderr.String(), tc.status, tc.stderr)
				}
			case status != 0:
				t.Errorf("%s %s: exit status %d\n%s", tc.cmd, strings.Join(args, " "), status, stderr.String())
			}

			want := kernelBefore
			if tc.removes { // the configurations' bridge and the tables
				want = []string{"link lo", "link nrinet0"}
			}
			if got := kernelState(t, ns, nsPath); !slices.Equal(got, want) {
				t.Errorf("in the network namespace: %q, want %q", got, want)
			}
			if after := listFiles(t, root); !slices.Equal(after, before) {
				t.Errorf("files under %s: %q, want only %q", root, after, before)
			}
		})
	}
}

// makeKernelState makes, in the namespace, what -uninstall removes: the
// bridges nrstart0 (the cases' configurations') and nrinet0 (the
// default), and nri-podnet's masquerade and NetworkPolicy tables.
func makeKernelState(t *testing.T, ns, nsPath string) {
	t.Helper()
	for _, br := range []string{"nrstart0", "nrinet0"} {
		testutil.Run(t, "ip", "-n", ns, "link", "add", br, "type", "bridge")
	}
	c := nftConn(t, nsPath)
	for _, name := range []string{"nrinet-podnet", "nrinet-podnet-netpol"} {
		c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: name})
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
}

// kernelState lists the links and nftables tables of the namespace.
func kernelState(t *testing.T, ns, nsPath string) []string {
	t.Helper()
	var state []string
	for l := range strings.SplitSeq(strings.TrimSpace(testutil.Run(t, "ip", "-n", ns, "-o", "link", "show")), "\n") {
		// "1: lo: <LOOPBACK> ..."
		if f := strings.Fields(l); len(f) > 1 {
			state = append(state, "link "+strings.TrimSuffix(f[1], ":"))
		}
	}
	tables, err := nftConn(t, nsPath).ListTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		state = append(state, fmt.Sprintf("table %v %s", tb.Family, tb.Name))
	}
	slices.Sort(state)
	return state
}

// nftConn is a netlink connection to nftables in the namespace.
func nftConn(t *testing.T, nsPath string) *nftables.Conn {
	t.Helper()
	f, err := os.Open(nsPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseLasting() })
	return c
}

// listFiles lists every file and directory under root, relative to it.
func listFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		files = append(files, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
