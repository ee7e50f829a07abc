package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// defaultConfigPath is read when -config is not given; a missing file
// there means the defaults.
const defaultConfigPath = "/etc/nrinetd/config.toml"

// options are the parsed command line.
type options struct {
	config      daemonConfig
	configPath  string
	showVersion bool
}

// parseFlags reads the configuration file named by -config (or
// defaultConfigPath, if it exists) and applies the flags given on top.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	fset := flag.NewFlagSet("nrinetd", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var (
		o        options
		f        daemonConfig
		required string
	)
	d := defaultConfig()
	fset.StringVar(&o.configPath, "config", "", "configuration file (TOML; default "+defaultConfigPath+" if it exists)")
	fset.BoolVar(&o.showVersion, "version", false, "print \"nrinetd VERSION\" and exit")
	fset.StringVar(&f.CRISocket, "cri-socket", "", "CRI socket (default "+d.CRISocket+")")
	fset.StringVar(&f.NRISocket, "nri-socket", "", `NRI socket for external plugins, "" to disable (default `+d.NRISocket+")")
	fset.StringVar(&f.PluginDir, "plugin-dir", "", `directory of pre-installed NRI plugins, "" to disable (default `+d.PluginDir+")")
	fset.StringVar(&f.PluginConfigDir, "plugin-config-dir", "", "directory of plugin configurations (default "+d.PluginConfigDir+")")
	fset.StringVar(&f.StateDir, "state-dir", "", "state directory (default "+d.StateDir+")")
	fset.StringVar(&required, "required-network-plugins", "", "comma-separated network plugins that must be connected for pods to be created")
	durationVar(fset, &f.StatusTimeout, "status-timeout", "deadline of a pod network status round (default "+time.Duration(d.StatusTimeout).String()+")")
	durationVar(fset, &f.StatusCacheTTL, "status-cache-ttl", "reuse of a non-verbose pod network status, 0 never (default "+time.Duration(d.StatusCacheTTL).String()+")")
	fset.StringVar(&f.MetricsAddress, "metrics-address", "", `host:port serving /healthz, /readyz (NetworkReady) and the Prometheus /metrics, "" to disable`)
	fset.StringVar(&f.LogLevel, "log-level", "", "debug, info, warn or error (default "+d.LogLevel+")")
	fset.StringVar(&f.LogFormat, "log-format", "", "text or json (default text)")
	if err := fset.Parse(args); err != nil {
		return o, err
	}
	if fset.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fset.Args())
	}
	if o.showVersion {
		return o, nil
	}

	path, explicit := o.configPath, o.configPath != ""
	if !explicit {
		path = defaultConfigPath
	}
	cfg, err := readConfig(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		cfg, path = defaultConfig(), ""
	case err != nil:
		return o, err
	}
	o.configPath = path

	// Flags given on the command line win over the file.
	fset.Visit(func(fl *flag.Flag) {
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
			cfg.RequiredNetworkPlugins = splitList(required)
		case "status-timeout":
			cfg.StatusTimeout = f.StatusTimeout
		case "status-cache-ttl":
			cfg.StatusCacheTTL = f.StatusCacheTTL
		case "metrics-address":
			cfg.MetricsAddress = f.MetricsAddress
		case "log-level":
			cfg.LogLevel = f.LogLevel
		case "log-format":
			cfg.LogFormat = f.LogFormat
		}
	})
	if err := cfg.Validate(); err != nil {
		return o, err
	}
	o.config = cfg
	return o, nil
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
