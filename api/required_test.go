package api_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
)

func TestRequiredAnnotationConstants(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"AnnotationDomain", api.AnnotationDomain, "noderesource.dev"},
		{"RequiredPluginsAnnotation", api.RequiredPluginsAnnotation, "required-plugins.noderesource.dev"},
		{"TolerateMissingPluginsAnnotation", api.TolerateMissingPluginsAnnotation, "tolerate-missing-nri-plugins.noderesource.dev"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestEffectiveAnnotation(t *testing.T) {
	const key = "example.com/x"
	all := map[string]string{
		key + "/container.ctr": "ctr",
		key + "/pod":           "pod",
		key:                    "plain",
	}
	tests := []struct {
		name        string
		annotations map[string]string
		container   string
		wantKey     string
		wantValue   string
		wantOK      bool
	}{
		{name: "container scope wins", annotations: all, container: "ctr", wantKey: key + "/container.ctr", wantValue: "ctr", wantOK: true},
		{name: "other container falls back to pod", annotations: all, container: "other", wantKey: key + "/pod", wantValue: "pod", wantOK: true},
		{name: "pod itself skips container scope", annotations: all, container: "", wantKey: key + "/pod", wantValue: "pod", wantOK: true},
		{name: "plain key last", annotations: map[string]string{key: "plain"}, container: "ctr", wantKey: key, wantValue: "plain", wantOK: true},
		{name: "plain key for pod", annotations: map[string]string{key: "plain"}, wantKey: key, wantValue: "plain", wantOK: true},
		{name: "empty value counts", annotations: map[string]string{key + "/pod": ""}, container: "ctr", wantKey: key + "/pod", wantOK: true},
		{name: "pod ignores empty container name key", annotations: map[string]string{key + "/container.": "x"}},
		{name: "missing", annotations: map[string]string{"other": "x"}, container: "ctr"},
		{name: "nil map", container: "ctr"},
	}
	for _, tt := range tests {
		k, v, ok := api.EffectiveAnnotation(tt.annotations, key, tt.container)
		if k != tt.wantKey || v != tt.wantValue || ok != tt.wantOK {
			t.Errorf("%s: EffectiveAnnotation(..., %q) = %q, %q, %v; want %q, %q, %v",
				tt.name, tt.container, k, v, ok, tt.wantKey, tt.wantValue, tt.wantOK)
		}
	}
}

func TestRequiredPlugins(t *testing.T) {
	const key = api.RequiredPluginsAnnotation
	tests := []struct {
		name        string
		annotations map[string]string
		container   string
		want        []string
		wantErr     string
	}{
		{name: "no annotation", annotations: map[string]string{"a": "b"}, container: "ctr"},
		{name: "json list", annotations: map[string]string{key: `["a", "10-b"]`}, container: "ctr", want: []string{"a", "10-b"}},
		{name: "yaml block list", annotations: map[string]string{key: "- a\n- b\n"}, container: "ctr", want: []string{"a", "b"}},
		{name: "yaml flow list", annotations: map[string]string{key: "[a, b]"}, want: []string{"a", "b"}},
		{name: "empty list", annotations: map[string]string{key: "[]"}, container: "ctr", want: []string{}},
		{name: "empty value", annotations: map[string]string{key: ""}, container: "ctr"},
		{
			name: "container scope first",
			annotations: map[string]string{
				key + "/container.ctr": `["c"]`, key + "/pod": `["p"]`, key: `["k"]`,
			},
			container: "ctr", want: []string{"c"},
		},
		{
			name:        "pod scope before plain key",
			annotations: map[string]string{key + "/container.other": `["c"]`, key + "/pod": `["p"]`, key: `["k"]`},
			container:   "ctr", want: []string{"p"},
		},
		{
			name:        "pod itself",
			annotations: map[string]string{key + "/container.ctr": `["c"]`, key: `["k"]`},
			want:        []string{"k"},
		},
		{
			name:        "scalar",
			annotations: map[string]string{key: "a"},
			container:   "ctr",
			wantErr:     `invalid annotation "required-plugins.noderesource.dev": value "a": want a list of plugin names: yaml: unmarshal errors: line 1: cannot unmarshal !!str ` + "`a`" + ` into []string`,
		},
		{
			name:        "syntax error names the scoped key",
			annotations: map[string]string{key + "/container.ctr": "[a", key: "[b]"},
			container:   "ctr",
			wantErr:     `invalid annotation "required-plugins.noderesource.dev/container.ctr": value "[a": want a list of plugin names: yaml: line 1: did not find expected ',' or ']'`,
		},
		{
			name:        "map",
			annotations: map[string]string{key + "/pod": "{a: b}"},
			wantErr:     `invalid annotation "required-plugins.noderesource.dev/pod": value "{a: b}": want a list of plugin names: yaml: unmarshal errors: line 1: cannot unmarshal !!map into []string`,
		},
		{
			name:        "nested list",
			annotations: map[string]string{key: "[[a]]"},
			wantErr:     `invalid annotation "required-plugins.noderesource.dev": value "[[a]]": want a list of plugin names: yaml: unmarshal errors: line 1: cannot unmarshal !!seq into string`,
		},
		{
			name:        "empty name",
			annotations: map[string]string{key: `["a", ""]`},
			wantErr:     `invalid annotation "required-plugins.noderesource.dev": value "[\"a\", \"\"]": entry 1 "": must not be empty`,
		},
		{
			name:        "bad name",
			annotations: map[string]string{key: `["my plugin"]`},
			wantErr:     `invalid annotation "required-plugins.noderesource.dev": value "[\"my plugin\"]": entry 0 "my plugin": invalid character ' ' at offset 2`,
		},
		{
			name:        "name too long",
			annotations: map[string]string{key: `["` + strings.Repeat("n", 129) + `"]`},
			wantErr:     `invalid annotation "required-plugins.noderesource.dev": value "[\"` + strings.Repeat("n", 129) + `\"]": entry 0 "` + strings.Repeat("n", 129) + `": 129 bytes, more than the limit of 128`,
		},
	}
	for _, tt := range tests {
		got, err := api.RequiredPlugins(tt.annotations, tt.container)
		checkErr(t, tt.name+": RequiredPlugins", err, tt.wantErr)
		if err != nil && !errors.Is(err, api.ErrInvalidAnnotation) {
			t.Errorf("%s: error %v does not wrap ErrInvalidAnnotation", tt.name, err)
		}
		if !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("%s: RequiredPlugins = %#v, want %#v", tt.name, got, tt.want)
		}
	}
}

func TestHasPlugin(t *testing.T) {
	plugins := []*api.PluginInstance{
		nil,
		{Name: "logger", Index: "10"},
		{Name: "net-policy", Index: "05"},
	}
	tests := []struct {
		name string
		want bool
	}{
		{"logger", true},
		{"10-logger", true},
		{"net-policy", true},
		{"05-net-policy", true},
		{"policy", false},
		{"11-logger", false},
		{"10-", false},
		{"-", false},
		{"", false},
		{"05", false},
	}
	for _, tt := range tests {
		if got := api.HasPlugin(plugins, tt.name); got != tt.want {
			t.Errorf("HasPlugin(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if api.HasPlugin(nil, "logger") {
		t.Error(`HasPlugin(nil, "logger") = true`)
	}
}

func ExampleRequiredPlugins() {
	annotations := map[string]string{
		api.RequiredPluginsAnnotation + "/pod":            `["10-policy"]`,
		api.RequiredPluginsAnnotation + "/container.init": "[]",
	}
	app, _ := api.RequiredPlugins(annotations, "app")
	initCtr, _ := api.RequiredPlugins(annotations, "init")
	fmt.Println(app, initCtr)

	plugins := []*api.PluginInstance{{Name: "policy", Index: "10"}}
	fmt.Println(api.HasPlugin(plugins, "policy"), api.HasPlugin(plugins, "10-policy"))
	// Output:
	// [10-policy] []
	// true true
}
