package api

import (
	"errors"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Annotations understood by NRI validators.
const (
	// AnnotationDomain is the domain of NRI-specific annotations.
	AnnotationDomain = "noderesource.dev"

	// RequiredPluginsAnnotation is the pod annotation listing plugins that
	// must be present when a pod or container is created. Its value is a
	// YAML or JSON list of plugin names, each either "name" or "NN-name".
	// It is scoped like every effective annotation (see
	// EffectiveAnnotation): "<key>/container.<name>" for one container,
	// "<key>/pod" or "<key>" for the whole pod.
	RequiredPluginsAnnotation = "required-plugins." + AnnotationDomain

	// TolerateMissingPluginsAnnotation is the toleration key upstream NRI
	// documents for its default validator. Upstream has no built-in
	// toleration key: a validator honours this one only when configured
	// to, and its value is then parsed as a boolean.
	TolerateMissingPluginsAnnotation = "tolerate-missing-nri-plugins." + AnnotationDomain
)

// ErrInvalidAnnotation is wrapped by errors about an annotation value that
// cannot be used, such as those of RequiredPlugins.
var ErrInvalidAnnotation = errors.New("invalid annotation")

// EffectiveAnnotation looks up the pod annotation key as it applies to the
// named container: "<key>/container.<container>" first, then "<key>/pod",
// then "<key>". An empty container names the pod itself, for which only
// "<key>/pod" and "<key>" are consulted. It returns the annotation key that
// matched and its value, or ok == false if none did.
func EffectiveAnnotation(annotations map[string]string, key, container string) (found, value string, ok bool) {
	keys := [3]string{key + "/container." + container, key + "/pod", key}
	start := 0
	if container == "" {
		start = 1
	}
	for _, k := range keys[start:] {
		if v, ok := annotations[k]; ok {
			return k, v, true
		}
	}
	return "", "", false
}

// RequiredPlugins returns the plugins the required-plugins annotation of a
// pod demands for the named container (or, if container is "", for the
// pod), looked up as EffectiveAnnotation does. Without an annotation it
// returns nil. A value that is not a YAML or JSON list of plugin names is
// an error naming the annotation key and value.
func RequiredPlugins(podAnnotations map[string]string, container string) ([]string, error) {
	key, value, ok := EffectiveAnnotation(podAnnotations, RequiredPluginsAnnotation, container)
	if !ok {
		return nil, nil
	}
	names, err := parsePluginList(value)
	if err != nil {
		return nil, fmt.Errorf("%w %q: value %q: %s", ErrInvalidAnnotation, key, value, err)
	}
	return names, nil
}

// parsePluginList parses a YAML (or JSON) list of plugin names. The error
// is a single line.
func parsePluginList(value string) ([]string, error) {
	var names []string
	if err := yaml.Unmarshal([]byte(value), &names); err != nil {
		return nil, fmt.Errorf("want a list of plugin names: %s", strings.Join(strings.Fields(err.Error()), " "))
	}
	for i, name := range names {
		if reason := checkPluginName(name); reason != "" {
			return nil, fmt.Errorf("entry %d %q: %s", i, name, reason)
		}
	}
	return names, nil
}

// HasPlugin reports whether plugins holds one called name, given either as
// the plain plugin name or as the full "NN-name" (see FullPluginName).
func HasPlugin(plugins []*PluginInstance, name string) bool {
	for _, p := range plugins {
		if p == nil {
			continue
		}
		if p.GetName() == name || FullPluginName(p.GetIndex(), p.GetName()) == name {
			return true
		}
	}
	return false
}
