// Package validator is upstream NRI's default validator on nrinet's
// (github.com/nrinet/nrinet/validator): [DefaultValidatorConfig] with
// upstream's fields and toml and yaml keys (containerd reads it from the
// default_validator section of its NRI configuration), and
// [DefaultValidator], which applies it to a container's merged
// adjustment.
//
// The rules are nrinet's validator's: OCI hook injection, seccomp policy
// adjustment by the container's profile, namespace and sysctl adjustment,
// and required plugins (configured, or listed in the pod's
// required-plugins annotation, unless the toleration annotation is true).
// Unlike upstream, a rejection lists every problem found, not only the
// first, and a malformed annotation rejects the container. Every rejection
// wraps [ErrValidation].
//
// Package builtin (plugins/default-validator/builtin) turns a
// configuration into the built-in plugin a runtime runs.
package validator
