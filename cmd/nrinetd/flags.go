package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/cmd/internal/cli"
	"github.com/nrinet/nrinet/cmd/internal/health"
	"github.com/nrinet/nrinet/cmd/internal/logflags"
)

// defaultConfigPath is read when -config is not given; a missing file
// there means the defaults.
const defaultConfigPath = "/etc/nrinetd/config.toml"

// options are the parsed command line.
type options struct {
	config      daemonConfig
	configPath  string
	showVersion bool
	// deprecated are the deprecated flag and key names the command line
	// and the file used, one line each, for the log.
	deprecated []string
}

// command is nrinetd's command line; parseFlags fills f, the flags given
// (each empty, or zero, when not given), required and o.
func command(o *options, f *daemonConfig, required *string) *cli.Command {
	d := defaultConfig()
	c := cli.New("nrinetd", `
A pod-sandbox-only CRI runtime: it serves the CRI RuntimeService for pod
sandboxes whose networks NRI plugins set up (e.g. nri-podnet, launched from
the plugin directory). It runs no containers. The configuration file is TOML
(every key: contrib/nrinetd.toml); the flags given override it. A usage or
configuration error exits with status 2, before anything is done; any other
error with status 1.`,
		"[-config FILE] [flags]")
	fset := c.Flags
	fset.StringVar(&o.configPath, "config", "", "configuration `file` (TOML; default "+defaultConfigPath+" if it exists)")
	fset.BoolVar(&o.showVersion, "version", false, "print \"nrinetd VERSION\" and exit")
	c.StringVar(&f.CRISocket, "cri-socket", "", "CRI socket `path` (default "+d.CRISocket+")", func(s string) error {
		if s == "" {
			return errors.New("want a path")
		}
		return nil
	})
	fset.StringVar(&f.NRISocket, "nri-socket", "", `NRI socket `+"`path`"+` for external plugins, "" to disable (default `+d.NRISocket+")")
	fset.StringVar(&f.PluginDir, "plugin-dir", "", "`directory` of pre-installed NRI plugins, \"\" to disable (default "+d.PluginDir+")")
	fset.StringVar(&f.PluginConfigDir, "plugin-config-dir", "", "`directory` of plugin configurations (default "+d.PluginConfigDir+")")
	c.StringVar(&f.StateDir, "state-dir", "", "state `directory`, an absolute path (default "+d.StateDir+")", checkAbs)
	c.StringVar(required, "required-network-plugins", "", "comma-separated network plugin `names` that must be connected for pods to be created", func(s string) error {
		for _, n := range splitList(s) {
			if err := checkPluginName(n); err != nil {
				return fmt.Errorf("%q: %w", n, err)
			}
		}
		return nil
	})
	durationVar(fset, &f.StatusTimeout, "status-timeout", "the `duration` a pod network status round may take (default "+time.Duration(d.StatusTimeout).String()+")")
	durationVar(fset, &f.StatusCacheTTL, "status-cache-ttl", "the `duration` a non-verbose pod network status is reused, 0 never (default "+time.Duration(d.StatusCacheTTL).String()+")")
	health.AddFlag(c, &f.HTTPAddress, "metrics-address", "/healthz, /readyz (NetworkReady) and /metrics (Prometheus)")
	c.StringVar(&f.LogLevel, "log-level", "", "log `level`: debug, info, warn or error (default "+d.LogLevel+")", func(s string) error { return nonEmpty(s, logflags.CheckLevel) })
	c.StringVar(&f.LogFormat, "log-format", "", "log `format`: text or json (default text)", func(s string) error { return nonEmpty(s, logflags.CheckFormat) })
	return c
}

// parseFlags reads the configuration file named by -config (or
// defaultConfigPath, if it exists) and applies the flags given on top. It
// returns flag.ErrHelp for -help, and a usage error for a bad command
// line or configuration.
func parseFlags(c *cli.Command, o *options, f *daemonConfig, required *string, args []string) error {
	if err := c.Parse(args); err != nil {
		return err
	}
	if o.showVersion {
		return nil
	}

	path, explicit := o.configPath, o.configPath != ""
	if !explicit {
		path = defaultConfigPath
	}
	// fileError names the file: with -config as a flag's value.
	fileError := func(err error) error {
		if explicit {
			return cli.FileError("config", path, err)
		}
		return cli.Usage(fmt.Errorf("%s: %w", path, err))
	}
	cfg, err := readConfig(path)
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		cfg, path = defaultConfig(), ""
	case errors.As(err, &pe) && pe.Path == path:
		return fileError(pe.Err) // the path is said once
	case err != nil:
		return fileError(err)
	}
	o.configPath = path

	// Flags given on the command line win over the file.
	c.Flags.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "cri-socket":
			cfg.CRISocket = f.CRISocket
		case "nri-socket":
			cfg.NRISocket = f.NRISocket
		case "plugin-dir":
			cfg.PluginDir = f.PluginDir
		case "plugin-config-dir":
			cfg.PluginConfigDir = f.PluginConfigDir
		case "state-dir":
			cfg.StateDir = f.StateDir
		case "required-network-plugins":
			cfg.RequiredNetworkPlugins = splitList(*required)
		case "status-timeout":
			cfg.StatusTimeout = f.StatusTimeout
		case "status-cache-ttl":
			cfg.StatusCacheTTL = f.StatusCacheTTL
		case health.FlagName, "metrics-address":
			cfg.HTTPAddress = f.HTTPAddress
		case "log-level":
			cfg.LogLevel = f.LogLevel
		case "log-format":
			cfg.LogFormat = f.LogFormat
		}
	})
	if err := cfg.Validate(); err != nil {
		// The flags' values are checked as they are set: the error is
		// the file's.
		if path == "" {
			return cli.Usage(err)
		}
		return fileError(err)
	}
	o.config = cfg
	o.deprecated = append(c.Deprecated(), cfg.deprecated...)
	return nil
}

// durationVar defines a duration flag.
func durationVar(fset *flag.FlagSet, d *duration, name, usage string) {
	fset.Func(name, usage, func(s string) error { return d.UnmarshalText([]byte(s)) })
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// checkPluginName checks a required network plugin's name, "name" or
// "NN-name", as the runtime does (runtime.WithRequiredNetworkPlugins).
func checkPluginName(n string) error {
	base := n
	if _, name, err := api.ParsePluginFileName(n); err == nil {
		base = name
	}
	if api.ValidatePluginName(base) != nil {
		return fmt.Errorf("want NAME or NN-NAME, NAME 1 to %d ASCII letters, digits and _.+-", api.MaxPluginNameLen)
	}
	return nil
}

// checkAbs is -state-dir's check.
func checkAbs(s string) error {
	if !filepath.IsAbs(s) {
		return errors.New("not an absolute path")
	}
	return nil
}

// nonEmpty runs check on s unless s is empty (the flag's "not given").
func nonEmpty(s string, check func(string) error) error {
	if s == "" {
		return nil
	}
	return check(s)
}
