package builtin

import (
	"context"

	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/log"
	validator "github.com/containerd/nri/plugins/default-validator"
	nvalidator "github.com/nrinet/nrinet/validator"
)

// DefaultValidatorConfig is the default validator's configuration.
type DefaultValidatorConfig = validator.DefaultValidatorConfig

// GetDefaultValidator returns the built-in default validator plugin for
// cfg, index "00", name "default-validator", or nil (and logs so) if cfg
// is nil or not enabled.
func GetDefaultValidator(cfg *DefaultValidatorConfig) *builtin.BuiltinPlugin {
	if cfg == nil || !cfg.Enable {
		log.Infof(context.TODO(), "built-in NRI default validator is disabled")
		return nil
	}
	v := validator.NewDefaultValidator(cfg)
	return &builtin.BuiltinPlugin{
		Base:  nvalidator.Name,
		Index: nvalidator.Index,
		Handlers: builtin.BuiltinHandlers{
			ValidateContainerAdjustment: v.ValidateContainerAdjustment,
		},
	}
}
