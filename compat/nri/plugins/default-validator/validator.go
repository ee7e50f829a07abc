package validator

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/containerd/nri/pkg/api"
	nrinet "github.com/nrinet/nrinet/api"
	nvalidator "github.com/nrinet/nrinet/validator"
)

// DefaultValidatorConfig configures the default validator. The zero value
// disables it. The field names, toml and yaml keys are upstream's.
type DefaultValidatorConfig struct {
	// Enable turns the default validator on.
	Enable bool `yaml:"enable" toml:"enable"`
	// RejectOCIHookAdjustment rejects containers into which a plugin
	// injected OCI hooks.
	RejectOCIHookAdjustment bool `yaml:"rejectOCIHookAdjustment" toml:"reject_oci_hook_adjustment"`
	// RejectRuntimeDefaultSeccompAdjustment rejects a plugin-set seccomp
	// policy for containers whose profile is the runtime default.
	RejectRuntimeDefaultSeccompAdjustment bool `yaml:"rejectRuntimeDefaultSeccompAdjustment" toml:"reject_runtime_default_seccomp_adjustment"`
	// RejectUnconfinedSeccompAdjustment rejects a plugin-set seccomp
	// policy for containers that are unconfined or have no profile.
	RejectUnconfinedSeccompAdjustment bool `yaml:"rejectUnconfinedSeccompAdjustment" toml:"reject_unconfined_seccomp_adjustment"`
	// RejectCustomSeccompAdjustment rejects a plugin-set seccomp policy
	// for containers with a custom (localhost) profile.
	RejectCustomSeccompAdjustment bool `yaml:"rejectCustomSeccompAdjustment" toml:"reject_custom_seccomp_adjustment"`
	// RejectNamespaceAdjustment rejects containers whose Linux namespaces
	// a plugin adjusted.
	RejectNamespaceAdjustment bool `yaml:"rejectNamespaceAdjustment" toml:"reject_namespace_adjustment"`
	// RejectSysctlAdjustment rejects containers whose sysctls a plugin
	// adjusted.
	RejectSysctlAdjustment bool `yaml:"rejectSysctlAdjustment" toml:"reject_sysctl_adjustment"`
	// RequiredPlugins lists plugins, as "name" or "NN-name", that must be
	// present for every container. Pods that must start before them
	// (such as their own static pods) need the toleration annotation.
	RequiredPlugins []string `yaml:"requiredPlugins" toml:"required_plugins"`
	// TolerateMissingAnnotation, if not empty, is an annotation key with
	// which a pod or container opts out of the required-plugins check by
	// setting it to true.
	TolerateMissingAnnotation string `yaml:"tolerateMissingPluginsAnnotation" toml:"tolerate_missing_plugins_annotation"`
}

// Config returns the configuration as nrinet's validator takes it.
func (c *DefaultValidatorConfig) Config() nvalidator.Config {
	if c == nil {
		return nvalidator.Config{}
	}
	return nvalidator.Config{
		Enable:                                c.Enable,
		RejectOCIHookAdjustment:               c.RejectOCIHookAdjustment,
		RejectRuntimeDefaultSeccompAdjustment: c.RejectRuntimeDefaultSeccompAdjustment,
		RejectUnconfinedSeccompAdjustment:     c.RejectUnconfinedSeccompAdjustment,
		RejectCustomSeccompAdjustment:         c.RejectCustomSeccompAdjustment,
		RejectNamespaceAdjustment:             c.RejectNamespaceAdjustment,
		RejectSysctlAdjustment:                c.RejectSysctlAdjustment,
		RequiredPlugins:                       c.RequiredPlugins,
		TolerateMissingPluginsAnnotation:      c.TolerateMissingAnnotation,
	}
}

// RequiredPlugins is the annotation key for extra required plugins.
const RequiredPlugins = nrinet.RequiredPluginsAnnotation

// ErrValidation is wrapped by every rejection of the default validator.
var ErrValidation = errors.New("validation error")

// DefaultValidator is the default validator. It is safe for concurrent
// use, SetConfig included.
type DefaultValidator struct {
	v atomic.Pointer[nvalidator.Validator]
}

// NewDefaultValidator returns a validator applying cfg (nil is the zero
// configuration). As upstream, it validates whether or not cfg.Enable is
// set: Enable decides whether a runtime runs the validator at all (see
// package builtin).
func NewDefaultValidator(cfg *DefaultValidatorConfig) *DefaultValidator {
	if cfg == nil {
		cfg = &DefaultValidatorConfig{}
	}
	v := &DefaultValidator{}
	v.SetConfig(cfg)
	return v
}

// SetConfig replaces the configuration; nil is ignored, as upstream.
func (v *DefaultValidator) SetConfig(cfg *DefaultValidatorConfig) {
	if cfg == nil {
		return
	}
	c := cfg.Config()
	c.Enable = true
	v.v.Store(nvalidator.New(c))
}

// ValidateContainerAdjustment accepts (nil) or rejects the merged
// adjustment of a container being created. A rejection wraps ErrValidation
// and the *validator.Rejection of nrinet's validator, which lists every
// problem, each naming the plugin or annotation concerned.
func (v *DefaultValidator) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if err := v.v.Load().ValidateContainerAdjustment(ctx, req); err != nil {
		return fmt.Errorf("%w: %w", ErrValidation, err)
	}
	return nil
}
