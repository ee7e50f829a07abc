package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
)

func TestValidatePluginName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string
	}{
		{name: "logger"},
		{name: "a"},
		{name: "My_Plugin-1.2+3"},
		{name: "network-logger"},
		{name: "", wantErr: `api: invalid plugin name "": must not be empty`},
		{name: "bad name", wantErr: `api: invalid plugin name "bad name": invalid character ' ' at offset 3`},
		{name: "a/b", wantErr: `api: invalid plugin name "a/b": invalid character '/' at offset 1`},
		{name: "ü", wantErr: `api: invalid plugin name "ü": invalid character 'ü' at offset 0`},
		{name: "x\n", wantErr: `api: invalid plugin name "x\n": invalid character '\n' at offset 1`},
		{name: "x\x00", wantErr: `api: invalid plugin name "x\x00": invalid character '\x00' at offset 1`},
		{name: "\x7f", wantErr: `api: invalid plugin name "\x7f": invalid character '\x7f' at offset 0`},
		{name: "a\tb", wantErr: `api: invalid plugin name "a\tb": invalid character '\t' at offset 1`},
		{name: "\u200bx", wantErr: `api: invalid plugin name "\u200bx": invalid character '\u200b' at offset 0`},
		{name: strings.Repeat("n", 128)},
		{name: strings.Repeat("n", 129), wantErr: `api: invalid plugin name "` + strings.Repeat("n", 32) + `"...: 129 bytes, more than the limit of 128`},
		{name: strings.Repeat("n", 4096), wantErr: `api: invalid plugin name "` + strings.Repeat("n", 32) + `"...: 4096 bytes, more than the limit of 128`},
	}
	for _, tt := range tests {
		checkErr(t, fmt.Sprintf("ValidatePluginName(%q)", tt.name), api.ValidatePluginName(tt.name), tt.wantErr)
	}
}

func TestValidatePluginIndex(t *testing.T) {
	tests := []struct {
		idx     string
		wantErr string
	}{
		{idx: "00"},
		{idx: "10"},
		{idx: "99"},
		{idx: "", wantErr: `api: invalid plugin index "": must be two digits`},
		{idx: "1", wantErr: `api: invalid plugin index "1": must be two digits`},
		{idx: "100", wantErr: `api: invalid plugin index "100": must be two digits`},
		{idx: "a1", wantErr: `api: invalid plugin index "a1": must be two digits`},
		{idx: "-1", wantErr: `api: invalid plugin index "-1": must be two digits`},
		{idx: "١٢", wantErr: `api: invalid plugin index "١٢": must be two digits`},
	}
	for _, tt := range tests {
		checkErr(t, fmt.Sprintf("ValidatePluginIndex(%q)", tt.idx), api.ValidatePluginIndex(tt.idx), tt.wantErr)
	}
}

func TestParsePluginFileName(t *testing.T) {
	tests := []struct {
		base     string
		wantIdx  string
		wantName string
		wantErr  string
	}{
		{base: "10-logger", wantIdx: "10", wantName: "logger"},
		{base: "05-network-logger", wantIdx: "05", wantName: "network-logger"},
		{base: "99--", wantIdx: "99", wantName: "-"},
		{base: "logger", wantErr: `api: invalid plugin file name "logger": want "NN-name"`},
		{base: "", wantErr: `api: invalid plugin file name "": want "NN-name"`},
		{base: "1-logger", wantErr: `api: invalid plugin file name "1-logger": index must be two digits`},
		{base: "ab-logger", wantErr: `api: invalid plugin file name "ab-logger": index must be two digits`},
		{base: "10-", wantErr: `api: invalid plugin file name "10-": name must not be empty`},
		{base: "10-a b", wantErr: `api: invalid plugin file name "10-a b": name invalid character ' ' at offset 1`},
		{base: "10-" + strings.Repeat("n", 128), wantIdx: "10", wantName: strings.Repeat("n", 128)},
		{base: "10-" + strings.Repeat("n", 129), wantErr: `api: invalid plugin file name "10-` + strings.Repeat("n", 129) + `": name 129 bytes, more than the limit of 128`},
	}
	for _, tt := range tests {
		idx, name, err := api.ParsePluginFileName(tt.base)
		checkErr(t, fmt.Sprintf("ParsePluginFileName(%q)", tt.base), err, tt.wantErr)
		if idx != tt.wantIdx || name != tt.wantName {
			t.Errorf("ParsePluginFileName(%q) = %q, %q; want %q, %q", tt.base, idx, name, tt.wantIdx, tt.wantName)
		}
		if err == nil {
			if full := api.FullPluginName(idx, name); full != tt.base {
				t.Errorf("FullPluginName(%q, %q) = %q, want %q", idx, name, full, tt.base)
			}
		}
	}
}

func TestFullPluginName(t *testing.T) {
	tests := []struct{ idx, name, want string }{
		{"10", "logger", "10-logger"},
		{"00", "a-b", "00-a-b"},
		{"", "", "-"},
	}
	for _, tt := range tests {
		if got := api.FullPluginName(tt.idx, tt.name); got != tt.want {
			t.Errorf("FullPluginName(%q, %q) = %q, want %q", tt.idx, tt.name, got, tt.want)
		}
	}
}

func TestPluginConstants(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"DefaultSocketPath", api.DefaultSocketPath, "/var/run/nri/nri.sock"},
		{"DefaultPluginPath", api.DefaultPluginPath, "/opt/nri/plugins"},
		{"DefaultPluginConfigPath", api.DefaultPluginConfigPath, "/etc/nri/conf.d"},
		{"PluginSocketEnv", api.PluginSocketEnv, "NRI_PLUGIN_SOCKET"},
		{"PluginNameEnv", api.PluginNameEnv, "NRI_PLUGIN_NAME"},
		{"PluginIdxEnv", api.PluginIdxEnv, "NRI_PLUGIN_IDX"},
		{"DefaultRegistrationTimeout", api.DefaultRegistrationTimeout.String(), "5s"},
		{"DefaultRequestTimeout", api.DefaultRequestTimeout.String(), "2s"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// checkErr reports whether err matches wantErr ("" meaning no error).
func checkErr(t *testing.T, call string, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("%s = %v, want nil", call, err)
	case wantErr != "" && err == nil:
		t.Errorf("%s = nil, want %q", call, wantErr)
	case wantErr != "" && err.Error() != wantErr:
		t.Errorf("%s = %q, want %q", call, err, wantErr)
	}
}

func ExampleParsePluginFileName() {
	idx, name, err := api.ParsePluginFileName("10-network-logger")
	fmt.Println(idx, name, err)
	fmt.Println(api.FullPluginName(idx, name))

	_, _, err = api.ParsePluginFileName("logger")
	fmt.Println(err)
	// Output:
	// 10 network-logger <nil>
	// 10-network-logger
	// api: invalid plugin file name "logger": want "NN-name"
}

func ExampleValidatePluginName() {
	fmt.Println(api.ValidatePluginName("network-logger"))
	fmt.Println(api.ValidatePluginName("net/logger"))
	// Output:
	// <nil>
	// api: invalid plugin name "net/logger": invalid character '/' at offset 3
}
