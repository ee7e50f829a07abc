package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// ErrWasmNotSupported is wrapped by every error of an attempt to load a
// WASM plugin.
var ErrWasmNotSupported = errors.New("nrinet does not run WASM plugins")

// Plugin is the interface of an NRI plugin compiled to WebAssembly, as
// upstream's WASM host loads it: the methods of the Plugin service.
type Plugin interface {
	PluginService
}

// HostFunctions are the functions a WASM host offers its plugins.
type HostFunctions interface {
	Log(context.Context, *LogRequest) (*Empty, error)
}

// LogRequest is a log message of a WASM plugin. Upstream's is a protobuf
// message of its HostFunctions service; nrinet's schema has no such
// service, so this is a plain struct with upstream's fields and getters.
type LogRequest struct {
	Msg   string
	Level LogRequest_Level
}

// GetMsg returns the message, or "" for nil.
func (x *LogRequest) GetMsg() string {
	if x == nil {
		return ""
	}
	return x.Msg
}

// GetLevel returns the level, or LogRequest_LEVEL_UNSPECIFIED for nil.
func (x *LogRequest) GetLevel() LogRequest_Level {
	if x == nil {
		return LogRequest_LEVEL_UNSPECIFIED
	}
	return x.Level
}

// LogRequest_Level is the level of a LogRequest.
type LogRequest_Level int32 //nolint:revive // upstream's generated name

// Levels of a LogRequest.
const (
	LogRequest_LEVEL_UNSPECIFIED LogRequest_Level = 0 //nolint:revive // upstream's generated names
	LogRequest_LEVEL_DEBUG       LogRequest_Level = 1
	LogRequest_LEVEL_INFO        LogRequest_Level = 2
	LogRequest_LEVEL_WARN        LogRequest_Level = 3
	LogRequest_LEVEL_ERROR       LogRequest_Level = 4
)

// Names and values of the LogRequest levels, as upstream's generated maps.
var (
	LogRequest_Level_name = map[int32]string{ //nolint:revive // upstream's generated name
		0: "LEVEL_UNSPECIFIED", 1: "LEVEL_DEBUG", 2: "LEVEL_INFO", 3: "LEVEL_WARN", 4: "LEVEL_ERROR",
	}
	LogRequest_Level_value = map[string]int32{ //nolint:revive // upstream's generated name
		"LEVEL_UNSPECIFIED": 0, "LEVEL_DEBUG": 1, "LEVEL_INFO": 2, "LEVEL_WARN": 3, "LEVEL_ERROR": 4,
	}
)

// String returns the name of l, or its number if it has none.
func (l LogRequest_Level) String() string {
	if name, ok := LogRequest_Level_name[int32(l)]; ok {
		return name
	}
	return strconv.Itoa(int(l))
}

// PluginPluginAPIVersion is the version of upstream's WASM plugin ABI.
const PluginPluginAPIVersion = 1

// PluginPlugin is upstream's loader of WASM plugins. Here it loads none:
// Load always fails.
type PluginPlugin struct{}

// wazeroConfig stands for upstream's WASM runtime configuration, which
// nothing here can set.
type wazeroConfig struct{}

// wazeroConfigOption stands for upstream's WASM runtime options.
type wazeroConfigOption func(*wazeroConfig)

// plugin is a loaded WASM plugin.
type plugin interface {
	Plugin
	Close(ctx context.Context) error
}

// NewPluginPlugin returns a WASM plugin loader whose Load always fails,
// so that a runtime that sets one up at start still starts.
func NewPluginPlugin(_ context.Context, _ ...wazeroConfigOption) (*PluginPlugin, error) {
	return &PluginPlugin{}, nil
}

// Load returns an error wrapping ErrWasmNotSupported that names the
// plugin at pluginPath.
func (p *PluginPlugin) Load(_ context.Context, pluginPath string, _ HostFunctions) (plugin, error) {
	return nil, fmt.Errorf("WASM plugin %q: %w", pluginPath, ErrWasmNotSupported)
}
