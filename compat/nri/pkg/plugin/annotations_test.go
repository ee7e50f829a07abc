package plugin_test

import (
	"testing"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/plugin"
)

func TestGetEffectiveAnnotation(t *testing.T) {
	const key = "example." + plugin.AnnotationDomain
	pod := &api.PodSandbox{Annotations: map[string]string{
		key + "/container.web": "web",
		key + "/pod":           "pod",
		key:                    "plain",
		"other/container.db":   "x",
	}}
	for _, tc := range []struct {
		name      string
		pod       *api.PodSandbox
		key       string
		container string
		value     string
		ok        bool
	}{
		{"container scope wins", pod, key, "web", "web", true},
		{"pod scope next", pod, key, "db", "pod", true},
		{"pod itself", pod, key, "", "pod", true},
		{"plain key last", &api.PodSandbox{Annotations: map[string]string{key: "plain"}}, key, "web", "plain", true},
		{"absent", pod, "missing", "web", "", false},
		{"no annotations", &api.PodSandbox{}, key, "web", "", false},
		{"nil pod", nil, key, "web", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value, ok := plugin.GetEffectiveAnnotation(tc.pod, tc.key, tc.container)
			if value != tc.value || ok != tc.ok {
				t.Errorf("got %q, %v; want %q, %v", value, ok, tc.value, tc.ok)
			}
		})
	}
	if plugin.RequiredPluginsAnnotation != "required-plugins.noderesource.dev" {
		t.Errorf("RequiredPluginsAnnotation = %q", plugin.RequiredPluginsAnnotation)
	}
}
