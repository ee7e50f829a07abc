// Command helm-release installs, upgrades, uninstalls and reports a
// release of a Helm chart on a cluster with Helm v4's library (its action
// package, as the helm command does), without the helm command.
// test/kube-e2e's TestHelm installs nrinet's chart with it
// (docs/dev/kube-e2e.md):
//
//	helm-release install   -kubeconfig FILE -namespace NS [-release NAME] -chart DIR [-f VALUES]... [-set K=V]... [-set-string K=V]... [-wait] [-timeout D]
//	helm-release upgrade   the same flags, and [-reuse-values]
//	helm-release uninstall -kubeconfig FILE -namespace NS [-release NAME] [-wait] [-timeout D]
//	helm-release status    -kubeconfig FILE -namespace NS [-release NAME]
//
// Each is the helm command of its name: -namespace is the release's
// (where Helm keeps its record, in Secrets), -f, -set and -set-string are
// helm's -f, --set and --set-string, -reuse-values helm upgrade's; -wait
// is helm's --wait=watcher (without it, --wait=hookOnly, helm's default),
// up to -timeout (default 5m, helm's). On success it prints the release
// as one JSON object ([Release]): its name, namespace, revision, Helm's
// status of it (deployed; uninstalled after uninstall), the chart and the
// objects of its manifest. Exit status: 0; 1 if the action failed (one
// line on standard error); 2 for a usage error; 3 if there is no such
// release (status, upgrade and uninstall; Helm's "release: not found").
// -help prints the flags on standard output. Helm's own log, warnings
// and above, goes to standard error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	ri "helm.sh/helm/v4/pkg/release"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"github.com/nrinet/nrinet/deploy/test/helmchart"
)

// Exit statuses.
const (
	exitFailed   = 1
	exitUsage    = 2
	exitNotFound = 3
)

// Release is what helm-release prints of a release.
type Release struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision"`
	// Status is Helm's: deployed, failed, uninstalled, pending-install, ...
	Status string `json:"status"`
	// Chart is the chart's name-version, AppVersion its appVersion.
	Chart      string `json:"chart"`
	AppVersion string `json:"appVersion"`
	// Objects are the objects of the release's manifest, in Helm's
	// install order, as the manifest names them.
	Objects []Object `json:"objects"`
}

// Object is one object of a release's manifest. Namespace is the
// manifest's, empty for a cluster-scoped object (and for a namespaced one
// the manifest leaves in the release's namespace).
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	status := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(status)
}

// list is a flag given any number of times.
type list []string

func (l *list) String() string     { return strings.Join(*l, " ") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// commands are the subcommands, in the order -help lists them.
var commands = []string{"install", "upgrade", "uninstall", "status"}

// usage is the first line of -help.
const usage = "Usage: helm-release install|upgrade|uninstall|status -kubeconfig FILE -namespace NS [-release NAME] [flags]"

// options are the flags of a subcommand.
type options struct {
	kubeconfig, namespace, release, chart string
	values                                helmchart.Flags
	wait, reuseValues                     bool
	timeout                               time.Duration
}

// run is the command with arguments args; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "helm-release: want a command, one of %s (helm-release -help lists the flags)\n", strings.Join(commands, ", "))
		return exitUsage
	}
	if slices.Contains([]string{"-help", "-h", "--help"}, args[0]) {
		// upgrade has every flag.
		args = []string{"upgrade", "-help"}
	}
	cmd := args[0]
	if !slices.Contains(commands, cmd) {
		fmt.Fprintf(stderr, "helm-release: unknown command %q: want one of %s\n", cmd, strings.Join(commands, ", "))
		return exitUsage
	}
	var o options
	fs := newFlagSet(cmd, &o)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "helm-release %s: %v (helm-release -help lists the flags)\n", cmd, err)
		return exitUsage
	}
	if err := o.check(cmd, fs.Args()); err != nil {
		fmt.Fprintf(stderr, "helm-release %s: %v\n", cmd, err)
		return exitUsage
	}
	var vals map[string]any
	if o.chart != "" {
		var err error
		if vals, err = helmchart.Values(o.values); err != nil {
			fmt.Fprintf(stderr, "helm-release %s: %v\n", cmd, err)
			return exitUsage
		}
	}
	rel, err := o.do(ctx, cmd, vals, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "helm-release %s %s (namespace %s): %v\n", cmd, o.release, o.namespace, err)
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return exitNotFound
		}
		return exitFailed
	}
	b, err := json.Marshal(rel)
	if err != nil {
		fmt.Fprintf(stderr, "helm-release %s: %v\n", cmd, err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return 0
}

// newFlagSet returns the flags of subcommand cmd, set into o.
func newFlagSet(cmd string, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("helm-release "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a bad flag is one line, in run
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "the cluster's kubeconfig (required)")
	fs.StringVar(&o.namespace, "namespace", "", "the release's namespace, where Helm keeps its record (required)")
	fs.StringVar(&o.release, "release", "nrinet", "the release's name")
	if cmd == "install" || cmd == "upgrade" {
		fs.StringVar(&o.chart, "chart", "", "install, upgrade: the chart's directory (required)")
		fs.Var((*list)(&o.values.Files), "f", "install, upgrade: a values file, as helm -f (repeatable)")
		fs.Var((*list)(&o.values.Set), "set", "install, upgrade: KEY=VALUE, as helm --set (repeatable)")
		fs.Var((*list)(&o.values.SetString), "set-string", "install, upgrade: KEY=VALUE, the value a string, as helm --set-string (repeatable)")
	}
	if cmd == "upgrade" {
		fs.BoolVar(&o.reuseValues, "reuse-values", false, "upgrade: the release's last values, with those given over them, as helm upgrade --reuse-values")
	}
	if cmd != "status" {
		fs.BoolVar(&o.wait, "wait", false, "install, upgrade, uninstall: wait until the objects are ready (or gone), as helm --wait=watcher")
		fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "install, upgrade, uninstall: how long Helm waits for the objects and the hooks, as helm --timeout")
	}
	return fs
}

// check checks the flags of subcommand cmd and its arguments.
func (o *options) check(cmd string, args []string) error {
	switch {
	case len(args) != 0:
		return fmt.Errorf("arguments %q: it takes flags only", args)
	case o.kubeconfig == "":
		return errors.New("-kubeconfig: the cluster's kubeconfig is required")
	case o.namespace == "":
		return errors.New("-namespace: the release's namespace is required")
	case o.release == "":
		return errors.New("-release: a name is required")
	case (cmd == "install" || cmd == "upgrade") && o.chart == "":
		return errors.New("-chart: the chart's directory is required")
	}
	return nil
}

// do runs subcommand cmd and returns the release it installed, upgraded,
// uninstalled or found.
func (o *options) do(ctx context.Context, cmd string, vals map[string]any, stderr io.Writer) (*Release, error) {
	getter := genericclioptions.NewConfigFlags(false)
	getter.KubeConfig, getter.Namespace = &o.kubeconfig, &o.namespace
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := cfg.Init(getter, o.namespace, "secret"); err != nil {
		return nil, err
	}
	wait := kube.HookOnlyStrategy
	if o.wait {
		wait = kube.StatusWatcherStrategy
	}
	var rel ri.Releaser
	var err error
	switch cmd {
	case "install", "upgrade":
		ch, lerr := loader.Load(o.chart)
		if lerr != nil {
			return nil, fmt.Errorf("load chart %s: %w", o.chart, lerr)
		}
		if cmd == "install" {
			in := action.NewInstall(cfg)
			in.ReleaseName, in.Namespace = o.release, o.namespace
			in.WaitStrategy, in.Timeout = wait, o.timeout
			rel, err = in.RunWithContext(ctx, ch, vals)
		} else {
			up := action.NewUpgrade(cfg)
			up.Namespace = o.namespace
			up.WaitStrategy, up.Timeout = wait, o.timeout
			up.ReuseValues = o.reuseValues
			rel, err = up.RunWithContext(ctx, o.release, ch, vals)
		}
	case "uninstall":
		un := action.NewUninstall(cfg)
		un.WaitStrategy, un.Timeout = wait, o.timeout
		var resp *ri.UninstallReleaseResponse
		if resp, err = un.Run(o.release); resp != nil {
			rel = resp.Release
		}
	case "status":
		rel, err = action.NewStatus(cfg).Run(o.release)
	}
	if err != nil {
		return nil, err
	}
	return describe(rel)
}

// describe returns what helm-release prints of rel.
func describe(rel ri.Releaser) (*Release, error) {
	a, err := ri.NewAccessor(rel)
	if err != nil {
		return nil, err
	}
	r := &Release{Name: a.Name(), Namespace: a.Namespace(), Revision: a.Version(), Status: a.Status(), Objects: []Object{}}
	if ch, ok := a.Chart().(*chart.Chart); ok && ch != nil && ch.Metadata != nil {
		r.Chart, r.AppVersion = ch.Metadata.Name+"-"+ch.Metadata.Version, ch.Metadata.AppVersion
	}
	docs := releaseutil.SplitManifests(a.Manifest())
	keys := slices.Collect(maps.Keys(docs))
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	for _, k := range keys {
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(docs[k]), &o); err != nil {
			return nil, fmt.Errorf("release %s's manifest: %w", r.Name, err)
		}
		if o.Kind == "" {
			continue // a document of comments only
		}
		r.Objects = append(r.Objects, Object{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name})
	}
	return r, nil
}
