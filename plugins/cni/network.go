package cni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/utils"
)

// confExtensions are the extensions of CNI network configuration files,
// as containerd and the kubelet read them: a .conflist holds a list, a
// .conf or .json a single plugin configuration (or, leniently, a list).
var confExtensions = []string{".conflist", ".conf", ".json"}

// Network is a loaded CNI network configuration list.
type Network struct {
	// List is the network configuration list; a single plugin
	// configuration (.conf, .json) is wrapped into a list of one.
	List *libcni.NetworkConfigList
	// File is the configuration file it was read from.
	File string
	// Loopback is the loopback network run before List (LoopbackNetwork);
	// nil with Config.UseInternalLoopback.
	Loopback *libcni.NetworkConfigList

	dir dirState // the configuration directory when it was loaded
}

// LoadNetwork loads the CNI network that cfg selects, the way containerd
// and the kubelet do: the lexically first configuration file in
// cfg.ConfDir, or the first one defining the network named cfg.Network.
// A file that cannot be parsed is an error naming the file. Every plugin
// type of the list must have an executable in cfg.BinDirs that supports
// the list's cniVersion (asked with the CNI VERSION command), and so must
// the loopback plugin unless cfg.UseInternalLoopback is set.
func LoadNetwork(ctx context.Context, cfg Config) (*Network, error) {
	return loadNetwork(ctx, cfg.withDefaults(), defaultExec(nil))
}

func loadNetwork(ctx context.Context, cfg Config, exec invoke.Exec) (*Network, error) {
	st, err := scanConfDir(cfg.ConfDir)
	if err != nil {
		return nil, err
	}
	if len(st) == 0 {
		return nil, fmt.Errorf("%w: no %s file in %s", ErrNoNetworkConfig, strings.Join(globs(), ", "), cfg.ConfDir)
	}
	for _, f := range st {
		path := filepath.Join(cfg.ConfDir, f.name)
		list, err := readNetworkFile(path)
		if err != nil {
			return nil, err
		}
		if cfg.Network != "" && list.Name != cfg.Network {
			continue
		}
		if err := checkPlugins(ctx, list, path, cfg.BinDirs, exec); err != nil {
			return nil, err
		}
		n := &Network{List: list, File: path, dir: st}
		if !cfg.UseInternalLoopback {
			n.Loopback = loopbackList()
			if err := checkPlugins(ctx, n.Loopback, "the loopback network, useInternalLoopback false", cfg.BinDirs, exec); err != nil {
				return nil, err
			}
		}
		return n, nil
	}
	return nil, fmt.Errorf("%w: no file in %s defines network %q", ErrNetworkNotFound, cfg.ConfDir, cfg.Network)
}

func globs() []string {
	out := make([]string, len(confExtensions))
	for i, e := range confExtensions {
		out[i] = "*" + e
	}
	return out
}

// readNetworkFile parses one configuration file into a list.
func readNetworkFile(path string) (*libcni.NetworkConfigList, error) {
	bad := func(err error) error { return fmt.Errorf("%w %s: %w", ErrInvalidNetworkConfig, path, err) }
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, bad(err)
	}
	var list *libcni.NetworkConfigList
	if filepath.Ext(path) == ".conflist" || hasPluginsKey(b) {
		// libcni also appends plugins from <confDir>/<name>/*.conf unless
		// the list sets loadOnlyInlinedPlugins.
		list, err = libcni.NetworkConfFromFile(path)
	} else {
		var conf *libcni.PluginConfig
		if conf, err = libcni.NetworkPluginConfFromBytes(b); err == nil {
			list, err = libcni.ConfListFromConf(conf)
		}
	}
	if err != nil {
		return nil, bad(err)
	}
	if len(list.Plugins) == 0 {
		return nil, bad(errors.New("no plugins in the list"))
	}
	if err := utils.ValidateNetworkName(list.Name); err != nil {
		return nil, bad(err)
	}
	return list, nil
}

// hasPluginsKey reports whether b is a JSON object with a "plugins" key:
// a list saved under a .conf or .json name.
func hasPluginsKey(b []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	_, ok := m["plugins"]
	return ok
}

// checkPlugins checks that every plugin type of list has an executable in
// dirs that supports the list's cniVersion.
func checkPlugins(ctx context.Context, list *libcni.NetworkConfigList, file string, dirs []string, exec invoke.Exec) error {
	checked := map[string]bool{}
	for _, p := range list.Plugins {
		typ := p.Network.Type
		if checked[typ] {
			continue
		}
		checked[typ] = true
		path, err := exec.FindInPath(typ, dirs)
		if err != nil {
			return fmt.Errorf("%w: network %q (%s) uses plugin type %q, which has no executable in %s",
				ErrPluginNotFound, list.Name, file, typ, strings.Join(dirs, ", "))
		}
		if list.CNIVersion == "" {
			continue
		}
		info, err := invoke.GetVersionInfo(ctx, path, exec)
		if err != nil {
			return fmt.Errorf("%w %s: plugin type %q (%s): asking its version: %w", ErrInvalidNetworkConfig, file, typ, path, err)
		}
		if !slices.Contains(info.SupportedVersions(), list.CNIVersion) {
			return fmt.Errorf("%w %s: plugin type %q (%s) does not support cniVersion %q (it supports %s)",
				ErrInvalidNetworkConfig, file, typ, path, list.CNIVersion, strings.Join(info.SupportedVersions(), ", "))
		}
	}
	return nil
}

// dirState lists the configuration files of a directory, sorted by name,
// with their sizes and modification times: a change means a reload.
type dirState []fileState

type fileState struct {
	name    string
	size    int64
	modTime time.Time
}

// scanConfDir returns the state of the configuration files in dir. A
// missing directory has none.
func scanConfDir(dir string) (dirState, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cni: reading CNI configuration directory: %w", err)
	}
	var st dirState
	for _, e := range entries {
		if !slices.Contains(confExtensions, filepath.Ext(e.Name())) {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name())) // follow symbolic links
		if err != nil || fi.IsDir() {
			continue
		}
		st = append(st, fileState{name: e.Name(), size: fi.Size(), modTime: fi.ModTime()})
	}
	return st, nil // os.ReadDir sorts by name
}

func (s dirState) equal(o dirState) bool {
	return slices.EqualFunc(s, o, func(a, b fileState) bool {
		return a.name == b.name && a.size == b.size && a.modTime.Equal(b.modTime)
	})
}
