// Command manifest renders nrinet's Helm chart into one manifest, as
// `helm template` would, for `make manifest` (the release's
// _output/nrinet.yaml, docs/deploy.md):
//
//	manifest -chart DIR [-o FILE] [-f VALUES]... [-set K=V]... [-set-string K=V]...
//
// -f, -set and -set-string are helm's -f, --set and --set-string. The
// manifest starts with a comment naming the chart and the values given;
// the objects follow in Helm's install order (the Namespace first), so
// that `kubectl apply -f` creates them in order. -o writes FILE whole or
// not at all. -help prints the flags on standard output; exit status 2
// for a usage error (one line on standard error), 1 if the chart does not
// render.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nrinet/nrinet/deploy/test/helmchart"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// list is a flag given any number of times.
type list []string

func (l *list) String() string     { return strings.Join(*l, " ") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// run is the command with arguments args; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("manifest", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a bad flag is one line, below
	chart := fs.String("chart", "", "the chart's directory, deploy/helm/nrinet (required)")
	out := fs.String("o", "-", "the file to write; - for standard output")
	var flags helmchart.Flags
	fs.Var((*list)(&flags.Files), "f", "a values file, as helm -f (repeatable)")
	fs.Var((*list)(&flags.Set), "set", "KEY=VALUE, as helm --set (repeatable)")
	fs.Var((*list)(&flags.SetString), "set-string", "KEY=VALUE, the value a string, as helm --set-string (repeatable)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "Usage: manifest -chart DIR [-o FILE] [-f VALUES]... [-set K=V]... [-set-string K=V]...")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "manifest: %v (manifest -help lists the flags)\n", err)
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "manifest: arguments %q: it takes flags only\n", fs.Args())
		return 2
	}
	if *chart == "" {
		fmt.Fprintln(stderr, "manifest: -chart: the chart's directory is required")
		return 2
	}
	vals, err := helmchart.Values(flags)
	if err != nil {
		fmt.Fprintf(stderr, "manifest: %v\n", err)
		return 2
	}
	m, err := helmchart.Render(context.Background(), *chart, vals)
	if err != nil {
		fmt.Fprintf(stderr, "manifest: %v\n", err)
		return 1
	}
	m = header(flags) + m
	if *out == "-" {
		_, err = io.WriteString(stdout, m)
	} else {
		err = writeFile(*out, m)
	}
	if err != nil {
		fmt.Fprintf(stderr, "manifest: %v\n", err)
		return 1
	}
	return 0
}

// header is the comment the manifest starts with: what it is and the
// values given.
func header(f helmchart.Flags) string {
	h := "# nrinet's Helm chart (deploy/helm/nrinet) rendered by make manifest"
	var with []string
	for _, v := range f.Files {
		with = append(with, "-f "+filepath.Base(v))
	}
	for _, v := range f.Set {
		with = append(with, "--set "+v)
	}
	for _, v := range f.SetString {
		with = append(with, "--set-string "+v)
	}
	if len(with) != 0 {
		h += " with " + strings.Join(with, " ")
	}
	return h + " (docs/deploy.md).\n"
}

// writeFile writes data to name through a temporary file in its
// directory, renamed over it: name is written whole or not at all.
func writeFile(name, data string) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return os.Rename(tmp.Name(), name)
}
