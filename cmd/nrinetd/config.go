package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/cmd/internal/health"
	"github.com/nrinet/nrinet/cmd/internal/logflags"
	"github.com/nrinet/nrinet/runtime"
	"github.com/nrinet/nrinet/validator"
)

// daemonConfig is nrinetd's configuration file (TOML). Keys left out keep their
// defaults; command-line flags override the file.
type daemonConfig struct {
	// CRISocket is the unix socket nrinetd serves CRI on.
	CRISocket string `toml:"cri_socket" json:"criSocket"`
	// NRISocket is the unix socket external NRI plugins connect to; ""
	// disables external plugins. containerd's names: socket_path, and
	// disable_connections = true for "".
	NRISocket string `toml:"nri_socket" json:"nriSocket"`
	// PluginDir holds pre-installed plugins (NN-name executables); ""
	// disables launching. containerd's name: plugin_path.
	PluginDir string `toml:"plugin_dir" json:"pluginDir"`
	// PluginConfigDir holds NN-name.conf or name.conf for them.
	// containerd's name: plugin_config_path.
	PluginConfigDir string `toml:"plugin_config_dir" json:"pluginConfigDir"`
	// StateDir holds the sandbox store (sandboxes.db). nrinetd creates it
	// with mode 0700, or makes an existing one 0700 if group or others
	// have any permission on it (with a warning in the log).
	StateDir string `toml:"state_dir" json:"stateDir"`
	// RequiredNetworkPlugins must be connected for pods to be created
	// (fail closed), as "NN-name" or "name".
	RequiredNetworkPlugins []string `toml:"required_network_plugins" json:"requiredNetworkPlugins"`
	// StatusTimeout bounds a pod network status round.
	StatusTimeout duration `toml:"status_timeout" json:"statusTimeout"`
	// StatusCacheTTL is how long a non-verbose status may be reused; 0
	// never.
	StatusCacheTTL duration `toml:"status_cache_ttl" json:"statusCacheTTL"`
	// RequestTimeout is a plugin's time for each request. containerd's
	// name: plugin_request_timeout.
	RequestTimeout duration `toml:"request_timeout" json:"requestTimeout"`
	// RegistrationTimeout is a connected plugin's time to register.
	// containerd's name: plugin_registration_timeout.
	RegistrationTimeout duration `toml:"registration_timeout" json:"registrationTimeout"`
	// FamilyPreference picks the primary pod address: "ipv4", "ipv6" or
	// "plugin-order".
	FamilyPreference string `toml:"family_preference" json:"familyPreference"`
	// ConflictPolicy says what happens when two plugins set the same
	// part of a pod network: "fail" or "aggregate".
	ConflictPolicy string `toml:"conflict_policy" json:"conflictPolicy"`
	// HTTPAddress is the host:port serving /healthz, /readyz (the
	// required network plugins connected) and the Prometheus /metrics; ""
	// disables them. Its deprecated name: metrics_address.
	HTTPAddress string `toml:"http_address" json:"httpAddress"`
	// LogLevel is "debug", "info", "warn" or "error".
	LogLevel string `toml:"log_level" json:"logLevel"`
	// LogFormat is "text" (the default) or "json".
	LogFormat string `toml:"log_format" json:"logFormat"`
	// ShutdownTimeout bounds the graceful shutdown.
	ShutdownTimeout duration `toml:"shutdown_timeout" json:"shutdownTimeout"`
	// Validator configures the built-in default validator, which checks
	// every container's merged adjustment and gates pods on their
	// required plugins ([validator] table; off unless enable = true).
	Validator validator.Config `toml:"validator" json:"validator"`

	// deprecated says which deprecated key names the file used, one line
	// each, for the log.
	deprecated []string
}

// duration is a time.Duration written as a string such as "250ms".
type duration time.Duration

// UnmarshalText parses a duration such as "1s".
func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

// MarshalText writes the duration as time.Duration prints it.
func (d duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// DefaultConfig returns the defaults.
func defaultConfig() daemonConfig {
	return daemonConfig{
		CRISocket:           "/run/nrinet/cri.sock",
		NRISocket:           api.DefaultSocketPath,
		PluginDir:           api.DefaultPluginPath,
		PluginConfigDir:     api.DefaultPluginConfigPath,
		StateDir:            "/var/lib/nrinetd",
		StatusTimeout:       duration(runtime.DefaultStatusTimeout),
		StatusCacheTTL:      duration(runtime.DefaultStatusCacheTTL),
		RequestTimeout:      duration(api.DefaultRequestTimeout),
		RegistrationTimeout: duration(api.DefaultRegistrationTimeout),
		FamilyPreference:    "ipv4",
		ConflictPolicy:      "fail",
		LogLevel:            "info",
		ShutdownTimeout:     duration(10 * time.Second),
	}
}

// otherKeys are the other names of settings nrinetd has under names of
// its own: the names containerd gives them in its NRI section
// ([plugins."io.containerd.nri.v1.nri"]), so that a containerd user's
// settings carry over, and nrinetd's own deprecated names. A nil field was
// not given.
type otherKeys struct {
	SocketPath                *string   `toml:"socket_path"`                 // nri_socket
	PluginPath                *string   `toml:"plugin_path"`                 // plugin_dir
	PluginConfigPath          *string   `toml:"plugin_config_path"`          // plugin_config_dir
	PluginRegistrationTimeout *duration `toml:"plugin_registration_timeout"` // registration_timeout
	PluginRequestTimeout      *duration `toml:"plugin_request_timeout"`      // request_timeout
	DisableConnections        *bool     `toml:"disable_connections"`         // true: nri_socket = ""

	MetricsAddress *string `toml:"metrics_address"` // deprecated name of http_address
}

// FromBytes parses a TOML configuration over the defaults and validates
// it. Unknown keys are errors. containerd's NRI key names are accepted
// for the settings nrinetd names otherwise (socket_path for nri_socket,
// plugin_path, plugin_config_path, plugin_registration_timeout,
// plugin_request_timeout, and disable_connections = true for
// nri_socket = ""); a setting given under both names with different
// values is an error naming both keys; so is the deprecated name
// metrics_address of http_address, which is noted in c.deprecated.
func parseConfig(b []byte) (daemonConfig, error) {
	c := defaultConfig()
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&c)
	if err != nil {
		return c, fmt.Errorf("parsing configuration: %w", err)
	}
	var ck otherKeys
	cmd, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&ck)
	if err != nil {
		return c, fmt.Errorf("parsing configuration: %w", err)
	}
	// Unknown: neither of nrinetd's keys nor another name of one.
	notContainerd := map[string]bool{}
	for _, k := range cmd.Undecoded() {
		notContainerd[k.String()] = true
	}
	var unknown []string
	for _, k := range md.Undecoded() {
		if notContainerd[k.String()] {
			unknown = append(unknown, fmt.Sprintf("%q", k.String()))
		}
	}
	if len(unknown) > 0 {
		return c, fmt.Errorf("unknown configuration keys %s", strings.Join(unknown, ", "))
	}
	if err := ck.apply(&c, md); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// apply sets the settings given under their other names in c; md says
// which of nrinetd's own keys the file gave. Every conflict is reported.
func (ck otherKeys) apply(c *daemonConfig, md toml.MetaData) error {
	var errs []error
	setAs := func(ours, theirs, what string, dst *string, v *string) {
		switch {
		case v == nil:
		case md.IsDefined(ours) && *dst != *v:
			errs = append(errs, fmt.Errorf("%s %q and %s %q (%s) set different values; give one", ours, *dst, theirs, *v, what))
		default:
			*dst = *v
		}
	}
	set := func(ours, theirs string, dst *string, v *string) {
		setAs(ours, theirs, "containerd's name for it", dst, v)
	}
	setDuration := func(ours, theirs string, dst *duration, v *duration) {
		switch {
		case v == nil:
		case md.IsDefined(ours) && *dst != *v:
			errs = append(errs, fmt.Errorf("%s %v and %s %v (containerd's name for it) set different values; give one",
				ours, time.Duration(*dst), theirs, time.Duration(*v)))
		default:
			*dst = *v
		}
	}
	set("nri_socket", "socket_path", &c.NRISocket, ck.SocketPath)
	set("plugin_dir", "plugin_path", &c.PluginDir, ck.PluginPath)
	set("plugin_config_dir", "plugin_config_path", &c.PluginConfigDir, ck.PluginConfigPath)
	setAs("http_address", "metrics_address", "its deprecated name", &c.HTTPAddress, ck.MetricsAddress)
	if ck.MetricsAddress != nil {
		c.deprecated = append(c.deprecated, "the configuration key metrics_address is deprecated: use http_address")
	}
	setDuration("registration_timeout", "plugin_registration_timeout", &c.RegistrationTimeout, ck.PluginRegistrationTimeout)
	setDuration("request_timeout", "plugin_request_timeout", &c.RequestTimeout, ck.PluginRequestTimeout)
	if d := ck.DisableConnections; d != nil {
		// nri_socket = "" is nrinetd's way to say it; socket_path has
		// been applied to NRISocket above.
		socketKey := "nri_socket"
		if ck.SocketPath != nil {
			socketKey = "socket_path"
		}
		socketGiven := md.IsDefined("nri_socket") || ck.SocketPath != nil
		switch {
		case *d && socketGiven && c.NRISocket != "":
			errs = append(errs, fmt.Errorf("disable_connections = true and %s %q contradict each other; give one", socketKey, c.NRISocket))
		case !*d && socketGiven && c.NRISocket == "":
			errs = append(errs, fmt.Errorf("disable_connections = false and %s \"\" (which disables connections) contradict each other; give one", socketKey))
		case *d:
			c.NRISocket = ""
		}
	}
	return errors.Join(errs...)
}

// readConfig reads and parses a configuration file; the caller names the
// file in an error.
func readConfig(path string) (daemonConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return daemonConfig{}, err
	}
	return parseConfig(b)
}

// Validate checks the configuration; errors name the key and the value.
func (c daemonConfig) Validate() error {
	var errs []error
	if c.CRISocket == "" {
		errs = append(errs, errors.New("cri_socket is empty"))
	}
	if c.StateDir == "" || !filepath.IsAbs(c.StateDir) {
		errs = append(errs, fmt.Errorf("state_dir %q is not an absolute path", c.StateDir))
	}
	for key, d := range map[string]duration{
		"status_timeout": c.StatusTimeout, "request_timeout": c.RequestTimeout,
		"registration_timeout": c.RegistrationTimeout, "shutdown_timeout": c.ShutdownTimeout,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s %v is not positive", key, time.Duration(d)))
		}
	}
	if c.HTTPAddress != "" {
		if err := health.CheckAddress(c.HTTPAddress); err != nil {
			errs = append(errs, fmt.Errorf("http_address: %w", err))
		}
	}
	for _, n := range c.RequiredNetworkPlugins {
		if err := checkPluginName(n); err != nil {
			errs = append(errs, fmt.Errorf("required_network_plugins %q: %w", n, err))
		}
	}
	if c.StatusCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("status_cache_ttl %v is negative", time.Duration(c.StatusCacheTTL)))
	}
	if _, err := c.familyPreference(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.conflictPolicy(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.logger(io.Discard); err != nil {
		errs = append(errs, err)
	}
	if c.Validator.Enable {
		if err := c.Validator.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("[validator]: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (c daemonConfig) familyPreference() (runtime.FamilyPreference, error) {
	switch c.FamilyPreference {
	case "ipv4", "":
		return runtime.PreferIPv4, nil
	case "ipv6":
		return runtime.PreferIPv6, nil
	case "plugin-order":
		return runtime.PreferPluginOrder, nil
	}
	return 0, fmt.Errorf("family_preference %q is not ipv4, ipv6 or plugin-order", c.FamilyPreference)
}

func (c daemonConfig) conflictPolicy() (runtime.ConflictPolicy, error) {
	switch c.ConflictPolicy {
	case "fail", "":
		return runtime.ConflictFail, nil
	case "aggregate":
		return runtime.ConflictAggregate, nil
	}
	return 0, fmt.Errorf("conflict_policy %q is not fail or aggregate", c.ConflictPolicy)
}

func (c daemonConfig) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return l, fmt.Errorf("log_level %q is not debug, info, warn or error", c.LogLevel)
	}
	return l, nil
}

// logger returns the logger log_level and log_format ask for, writing to
// w (cmd/internal/logflags, as the plugins').
func (c daemonConfig) logger(w io.Writer) (*slog.Logger, error) {
	l, err := c.level()
	if err != nil {
		return nil, err
	}
	log, err := logflags.New(w, l, c.LogFormat)
	if err != nil {
		return nil, fmt.Errorf("log_format %q is not text or json", c.LogFormat)
	}
	return log, nil
}

// runtimeOptions turns the configuration into options of the runtime
// library.
func (c daemonConfig) runtimeOptions() []runtime.Option {
	fam, _ := c.familyPreference()
	pol, _ := c.conflictPolicy()
	opts := []runtime.Option{
		runtime.WithPluginPath(c.PluginDir),
		runtime.WithPluginConfigPath(c.PluginConfigDir),
		runtime.WithStatusTimeout(time.Duration(c.StatusTimeout)),
		runtime.WithStatusCacheTTL(time.Duration(c.StatusCacheTTL)),
		runtime.WithRequestTimeout(time.Duration(c.RequestTimeout)),
		runtime.WithRegistrationTimeout(time.Duration(c.RegistrationTimeout)),
		runtime.WithFamilyPreference(fam),
		runtime.WithNetworkConflictPolicy(pol),
	}
	if c.NRISocket == "" {
		opts = append(opts, runtime.WithoutExternalPlugins())
	} else {
		opts = append(opts, runtime.WithSocketPath(c.NRISocket))
	}
	if len(c.RequiredNetworkPlugins) > 0 {
		opts = append(opts, runtime.WithRequiredNetworkPlugins(c.RequiredNetworkPlugins...))
	}
	if c.Validator.Enable {
		v := validator.New(c.Validator)
		opts = append(opts, runtime.WithValidator(v.Index()+"-"+v.Name(), v))
	}
	return opts
}
