package cni

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Defaults of Config, the same as containerd's and the kubelet's.
const (
	DefaultConfDir  = "/etc/cni/net.d"
	DefaultBinDir   = "/opt/cni/bin"
	DefaultCacheDir = "/var/lib/cni"
)

// Config is the plugin's configuration, given as JSON by the runtime in
// Configure (a launched plugin's NN-name.conf) or read from a file:
//
//	{
//	  "confDir":  "/etc/cni/net.d",
//	  "binDirs":  ["/opt/cni/bin"],
//	  "cacheDir": "/var/lib/cni",
//	  "network":  "",
//	  "useInternalLoopback": false
//	}
//
// Every field is optional; a missing or empty field takes its default.
// Unknown fields are an error.
type Config struct {
	// ConfDir holds the CNI network configuration files (*.conflist,
	// *.conf, *.json). Default DefaultConfDir.
	ConfDir string `json:"confDir,omitempty"`
	// BinDirs are searched, in order, for the CNI plugin executables.
	// Default [DefaultBinDir].
	BinDirs []string `json:"binDirs,omitempty"`
	// CacheDir is libcni's cache of results and configurations, which
	// StopPodSandbox, PodSandboxStatus and garbage collection read.
	// Default DefaultCacheDir.
	CacheDir string `json:"cacheDir,omitempty"`
	// Network is the name of the CNI network to use. Empty means the
	// network of the lexically first configuration file in ConfDir.
	Network string `json:"network,omitempty"`
	// UseInternalLoopback sets the pod's loopback interface up directly
	// instead of running the loopback network (LoopbackNetwork, the CNI
	// plugin "loopback") before the pod's network: containerd's
	// use_internal_loopback. Default false, as in containerd.
	UseInternalLoopback bool `json:"useInternalLoopback,omitempty"`
}

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig() Config {
	return Config{ConfDir: DefaultConfDir, BinDirs: []string{DefaultBinDir}, CacheDir: DefaultCacheDir}
}

// withDefaults returns c with its empty fields set to their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.ConfDir == "" {
		c.ConfDir = d.ConfDir
	}
	if len(c.BinDirs) == 0 {
		c.BinDirs = d.BinDirs
	}
	if c.CacheDir == "" {
		c.CacheDir = d.CacheDir
	}
	return c
}

// Validate checks that every directory is an absolute path. It does not
// look at the file system.
func (c *Config) Validate() error {
	var errs []error
	check := func(field, dir string) {
		if !filepath.IsAbs(dir) {
			errs = append(errs, fmt.Errorf("%s %q is not an absolute path", field, dir))
		}
	}
	check("confDir", c.ConfDir)
	check("cacheDir", c.CacheDir)
	if len(c.BinDirs) == 0 {
		errs = append(errs, errors.New("binDirs is empty"))
	}
	for _, d := range c.BinDirs {
		check("binDirs entry", d)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// ConfigFromBytes parses a JSON configuration, fills in the defaults and
// validates it. Empty input (or only white space) means the defaults.
func ConfigFromBytes(b []byte) (*Config, error) {
	var c Config
	if len(bytes.TrimSpace(b)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%w: data after the JSON object", ErrInvalidConfig)
		}
	}
	c = c.withDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// ConfigFromFile reads a configuration file with ConfigFromBytes. Errors
// name the file.
func ConfigFromFile(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cni: reading configuration: %w", err)
	}
	c, err := ConfigFromBytes(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
