package pluginops

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/plugin"
)

// ExitNoNetworkExtension is the exit status of a plugin that refused a
// runtime without nrinet's pod network extension
// (plugin.ErrNoNetworkExtension). The others are every command's
// (package cli): 2 for a usage or configuration error, 1 for any other.
const ExitNoNetworkExtension = 3

// ExitCode is the exit status for a plugin command's error:
// ExitNoNetworkExtension for a refused runtime, else cli.ExitCode's.
func ExitCode(err error) int {
	if errors.Is(err, plugin.ErrNoNetworkExtension) {
		return ExitNoNetworkExtension
	}
	return cli.ExitCode(err)
}

// Main runs run as the plugin command c (cli.Command.Main: -help's usage
// on standard output, an error on one line of standard error) and exits
// with ExitCode's status.
func Main(c *cli.Command, run func() error) {
	c.Main(func() error {
		err := run()
		if ExitCode(err) == ExitNoNetworkExtension {
			return cli.WithStatus(ExitNoNetworkExtension, err)
		}
		return err
	})
}

// checkName is -name's check.
func checkName(s string) error {
	if api.ValidatePluginName(s) != nil {
		return fmt.Errorf("want 1 to %d ASCII letters, digits and _.+-", api.MaxPluginNameLen)
	}
	return nil
}

// checkIdx is -idx's check.
func checkIdx(s string) error {
	if api.ValidatePluginIndex(s) != nil {
		return errors.New("want two digits, 00 to 99")
	}
	return nil
}

// Identity returns the plugin's name and index options by one rule for
// every plugin command: -name and -idx when given; else what the runtime
// passes (NRI_PLUGIN_NAME, NRI_PLUGIN_IDX) or the executable's NN-name
// file name gives, which the plugin library reads; else the defaults of
// -name and -idx.
func (o *Ops) Identity() []plugin.Option {
	set := map[string]bool{}
	o.cmd.Flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	_, _, nnErr := api.ParsePluginFileName(filepath.Base(os.Args[0]))
	named := nnErr == nil
	var opts []plugin.Option
	switch {
	case set["name"]:
		opts = append(opts, plugin.WithPluginName(o.Name))
	case os.Getenv(api.PluginNameEnv) == "" && !named:
		opts = append(opts, plugin.WithPluginName(o.defName))
	}
	switch {
	case set["idx"]:
		opts = append(opts, plugin.WithPluginIdx(o.Idx))
	case os.Getenv(api.PluginIdxEnv) == "" && !named:
		opts = append(opts, plugin.WithPluginIdx(o.defIdx))
	}
	return opts
}
