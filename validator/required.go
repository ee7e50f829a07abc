package validator

import (
	"fmt"
	"strconv"

	"github.com/nrinet/nrinet/api"
)

// checkRequired returns a problem for each required plugin not among
// plugins, and for each malformed annotation. The required plugins are the
// configured ones followed by those of the required-plugins annotation for
// container ("" for the pod itself). A true toleration annotation skips
// the check.
func (v *Validator) checkRequired(annotations map[string]string, container string, plugins []*api.PluginInstance) []error {
	var problems []error
	tolerate, err := v.tolerates(annotations, container)
	switch {
	case err != nil:
		problems = append(problems, err)
	case tolerate:
		return nil
	}

	type requirement struct{ name, source string }
	var required []requirement
	for _, name := range v.cfg.RequiredPlugins {
		required = append(required, requirement{name, "configuration"})
	}
	annotated, err := api.RequiredPlugins(annotations, container)
	if err != nil {
		problems = append(problems, err)
	}
	if len(annotated) > 0 {
		key, _, _ := api.EffectiveAnnotation(annotations, api.RequiredPluginsAnnotation, container)
		for _, name := range annotated {
			required = append(required, requirement{name, fmt.Sprintf("annotation %q", key)})
		}
	}

	seen := make(map[string]bool)
	for _, r := range required {
		if seen[r.name] || api.HasPlugin(plugins, r.name) {
			continue
		}
		seen[r.name] = true
		problems = append(problems, fmt.Errorf("required plugin %q (from %s) is not present", r.name, r.source))
	}
	return problems
}

// tolerates reports whether the configured toleration annotation, if any,
// lets container (or the pod, for "") do without required plugins.
func (v *Validator) tolerates(annotations map[string]string, container string) (bool, error) {
	if v.cfg.TolerateMissingPluginsAnnotation == "" {
		return false, nil
	}
	key, value, ok := api.EffectiveAnnotation(annotations, v.cfg.TolerateMissingPluginsAnnotation, container)
	if !ok {
		return false, nil
	}
	tolerate, err := strconv.ParseBool(value)
	if err != nil {
		return false, fmt.Errorf("%w %q: value %q: want true or false", api.ErrInvalidAnnotation, key, value)
	}
	return tolerate, nil
}
