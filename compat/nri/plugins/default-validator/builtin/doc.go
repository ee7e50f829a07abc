// Package builtin turns a default validator configuration into the
// built-in plugin a runtime runs, as upstream NRI's
// plugins/default-validator/builtin: [GetDefaultValidator] returns the
// plugin "00-default-validator", handling ValidateContainerAdjustment
// only, or nil when the validator is disabled.
package builtin
