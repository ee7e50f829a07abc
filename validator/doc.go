// Package validator is nrinet's default validator, the counterpart of the
// builtin "default-validator" of containerd/nri: a validating plugin with
// index 00 that vets the merged result of all mutating plugins before a
// container is created, and, as an nrinet extension, the creation of pods.
//
// A [Validator] is built from a [Config], which the daemon reads from TOML
// (field names as upstream's, e.g. reject_oci_hook_adjustment). With
// Enable false it accepts everything. Otherwise
// [Validator.ValidateContainerAdjustment] rejects, each when configured:
//
//   - OCI hooks injected by any plugin (reject_oci_hook_adjustment);
//   - a seccomp policy set by a plugin, depending on the container's own
//     seccomp profile: runtime default, unconfined (also when the container
//     has no profile) or custom/localhost (the three
//     reject_*_seccomp_adjustment flags);
//   - any Linux namespace adjusted by a plugin (reject_namespace_adjustment);
//   - any sysctl adjusted by a plugin (reject_sysctl_adjustment);
//
// and, always, a container for which a required plugin is missing. The
// required plugins are the configured required_plugins plus those listed in
// the pod's [api.RequiredPluginsAnnotation] for the container (see
// [api.RequiredPlugins]). A plugin may be named "name" or "NN-name". If
// tolerate_missing_plugins_annotation names an annotation key and that
// annotation, looked up with the same container/pod precedence, is true, the
// required-plugins check is skipped. [Validator.ValidatePodSandbox] applies
// the same required-plugins check to a pod being created, using the
// pod-level annotations only.
//
// Who adjusted what is taken from the ownership record of the request
// (api.OwningPlugins), so every rejection names the plugin responsible.
// All problems found are reported at once, in one [*Rejection] whose text
// lists them separated by "; "; the runtime passes that text on as the
// rejection reason. A malformed annotation is itself a problem, so it
// rejects the container.
//
// A Validator is immutable and safe for concurrent use.
package validator
