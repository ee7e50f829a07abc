package pluginops

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
)

// The exit statuses of the plugin commands.
const (
	// ExitFailure is every failure not below.
	ExitFailure = 1
	// ExitUsage is a usage or configuration error: a bad flag or
	// argument, a configuration file that cannot be read or is invalid.
	ExitUsage = 2
	// ExitNoNetworkExtension: the plugin refused a runtime without nrinet's
	// pod network extension (plugin.ErrNoNetworkExtension).
	ExitNoNetworkExtension = 3
)

// usageError marks an error as a usage or configuration error.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Usage marks err as a usage or configuration error (ExitUsage); nil
// stays nil.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// ExitCode is the exit status for run's error: 0 for nil, ExitUsage,
// ExitNoNetworkExtension, else ExitFailure.
func ExitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u), errors.Is(err, flag.ErrHelp):
		return ExitUsage
	case errors.Is(err, plugin.ErrNoNetworkExtension):
		return ExitNoNetworkExtension
	}
	return ExitFailure
}

// Main runs run and exits with its status (ExitCode), printing a failure
// on standard error after the command's name. -help exits 0.
func Main(name string, run func() error) {
	err := run()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	}
	os.Exit(ExitCode(err))
}

// NoArgs refuses arguments left after the flags, a usage error.
func NoArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return Usage(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	return nil
}

// Identity returns the plugin's name and index options by one rule for
// every plugin command: -name and -idx when given; else what the runtime
// passes (NRI_PLUGIN_NAME, NRI_PLUGIN_IDX) or the executable's NN-name
// file name gives, which the plugin library reads; else defName and
// defIdx.
func Identity(fs *flag.FlagSet, name, idx, defName, defIdx string) []plugin.Option {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	_, _, nnErr := api.ParsePluginFileName(filepath.Base(os.Args[0]))
	named := nnErr == nil
	var opts []plugin.Option
	switch {
	case set["name"]:
		opts = append(opts, plugin.WithPluginName(name))
	case os.Getenv(api.PluginNameEnv) == "" && !named:
		opts = append(opts, plugin.WithPluginName(defName))
	}
	switch {
	case set["idx"]:
		opts = append(opts, plugin.WithPluginIdx(idx))
	case os.Getenv(api.PluginIdxEnv) == "" && !named:
		opts = append(opts, plugin.WithPluginIdx(defIdx))
	}
	return opts
}

// Serve runs network plugin handler h as the plugin commands do, until
// ctx ends: it refuses a runtime without nrinet's pod network extension
// (which would drop its networks and set pods up its own way), takes its
// name and index by Identity, dials socket if given, and reconnects
// unless the runtime launched it (on the socket the runtime passed there
// is nothing to reconnect to). Its readiness joins /readyz. It returns
// nil after SIGINT/SIGTERM (ctx) and after the runtime shut a launched
// plugin down, else why the plugin stopped.
func (o *Ops) Serve(ctx context.Context, h any, log *slog.Logger, fs *flag.FlagSet, name, idx, defName, defIdx, socket string, launched bool) error {
	opts := []plugin.Option{plugin.WithLogger(log), plugin.WithRequiredNetworkExtension()}
	opts = append(opts, Identity(fs, name, idx, defName, defIdx)...)
	if socket != "" {
		opts = append(opts, plugin.WithSocketPath(socket))
	}
	if !launched {
		opts = append(opts, plugin.WithReconnect(0, 0))
	}
	s, err := plugin.New(h, opts...)
	if err != nil {
		return err
	}
	o.Joining(s)
	return s.Run(ctx)
}
