package validator

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/nrinet/nrinet/api"
)

// Config configures the default validator. It mirrors upstream's
// DefaultValidatorConfig: the toml tags are the keys of containerd's
// default_validator section, the json and yaml tags upstream's field names.
// The zero Config disables the validator.
type Config struct {
	// Enable turns the validator on; when false it accepts everything.
	Enable bool `toml:"enable" json:"enable" yaml:"enable"`
	// RejectOCIHookAdjustment rejects containers into which a plugin
	// injected OCI hooks.
	RejectOCIHookAdjustment bool `toml:"reject_oci_hook_adjustment" json:"rejectOCIHookAdjustment" yaml:"rejectOCIHookAdjustment"`
	// RejectRuntimeDefaultSeccompAdjustment rejects a plugin-set seccomp
	// policy for containers whose profile is the runtime default.
	RejectRuntimeDefaultSeccompAdjustment bool `toml:"reject_runtime_default_seccomp_adjustment" json:"rejectRuntimeDefaultSeccompAdjustment" yaml:"rejectRuntimeDefaultSeccompAdjustment"`
	// RejectUnconfinedSeccompAdjustment rejects a plugin-set seccomp
	// policy for containers that are unconfined or have no profile.
	RejectUnconfinedSeccompAdjustment bool `toml:"reject_unconfined_seccomp_adjustment" json:"rejectUnconfinedSeccompAdjustment" yaml:"rejectUnconfinedSeccompAdjustment"`
	// RejectCustomSeccompAdjustment rejects a plugin-set seccomp policy for
	// containers with a custom (localhost) profile.
	RejectCustomSeccompAdjustment bool `toml:"reject_custom_seccomp_adjustment" json:"rejectCustomSeccompAdjustment" yaml:"rejectCustomSeccompAdjustment"`
	// RejectNamespaceAdjustment rejects containers whose Linux namespaces
	// a plugin adjusted.
	RejectNamespaceAdjustment bool `toml:"reject_namespace_adjustment" json:"rejectNamespaceAdjustment" yaml:"rejectNamespaceAdjustment"`
	// RejectSysctlAdjustment rejects containers whose sysctls a plugin
	// adjusted.
	RejectSysctlAdjustment bool `toml:"reject_sysctl_adjustment" json:"rejectSysctlAdjustment" yaml:"rejectSysctlAdjustment"`
	// RequiredPlugins lists plugins, as "name" or "NN-name", that must be
	// present for every pod and container. Pods that must start before
	// these plugins run (such as the plugins' own static pods) need the
	// toleration annotation.
	RequiredPlugins []string `toml:"required_plugins" json:"requiredPlugins" yaml:"requiredPlugins"`
	// TolerateMissingPluginsAnnotation, if not empty, is an annotation key
	// (for instance api.TolerateMissingPluginsAnnotation) with which a pod
	// or container may opt out of the required-plugins check by setting it
	// to true.
	TolerateMissingPluginsAnnotation string `toml:"tolerate_missing_plugins_annotation" json:"tolerateMissingPluginsAnnotation" yaml:"tolerateMissingPluginsAnnotation"`
}

// Validate checks that the required plugins are valid plugin names and
// that the toleration annotation, if set, is a usable annotation key. It
// reports every problem found.
func (c Config) Validate() error {
	var errs []error
	for i, name := range c.RequiredPlugins {
		if err := api.ValidatePluginName(name); err != nil {
			errs = append(errs, fmt.Errorf("default validator: required_plugins[%d]: %w", i, err))
		}
	}
	if err := checkAnnotationKey(c.TolerateMissingPluginsAnnotation); err != nil {
		errs = append(errs, fmt.Errorf("default validator: tolerate_missing_plugins_annotation %q: %w", c.TolerateMissingPluginsAnnotation, err))
	}
	return errors.Join(errs...)
}

// checkAnnotationKey vets an optional toleration annotation key.
func checkAnnotationKey(key string) error {
	switch {
	case key == "":
		return nil
	case key == api.RequiredPluginsAnnotation:
		return errors.New("is the required-plugins annotation")
	case strings.ContainsFunc(key, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }):
		return errors.New("contains white space or unprintable characters")
	}
	return nil
}
