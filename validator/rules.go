package validator

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nrinet/nrinet/api"
)

// checkHooks rejects OCI hooks injected by any plugin. The hooks owner is
// a comma-separated list, as several plugins may add hooks.
func (v *Validator) checkHooks(owners *api.FieldOwners) []error {
	if !v.cfg.RejectOCIHookAdjustment {
		return nil
	}
	owner, ok := owners.GetSimple()[int32(api.Field_OciHooks)]
	if !ok {
		return nil
	}
	var plugins []string
	for p := range strings.SplitSeq(owner, ",") {
		if p = strings.TrimSpace(p); p != "" {
			plugins = append(plugins, fmt.Sprintf("%q", p))
		}
	}
	switch len(plugins) {
	case 0:
		return []error{fmt.Errorf("an unnamed plugin injected OCI hooks, which is not allowed")}
	case 1:
		return []error{fmt.Errorf("plugin %s injected OCI hooks, which is not allowed", plugins[0])}
	}
	return []error{fmt.Errorf("plugins %s injected OCI hooks, which is not allowed", strings.Join(plugins, ", "))}
}

// checkSeccomp rejects a plugin-set seccomp policy if the flag for the
// container's own profile type is set. No profile counts as unconfined; an
// unknown profile type is rejected if any of the three flags is set.
func (v *Validator) checkSeccomp(owners *api.FieldOwners, profile *api.SecurityProfile) []error {
	owner, ok := owners.GetSimple()[int32(api.Field_SeccompPolicy)]
	if !ok {
		return nil
	}
	var rejected bool
	var what string
	switch typ := profile.GetProfileType(); {
	case profile == nil || typ == api.SecurityProfile_UNCONFINED:
		rejected, what = v.cfg.RejectUnconfinedSeccompAdjustment, "an unconfined seccomp profile"
	case typ == api.SecurityProfile_RUNTIME_DEFAULT:
		rejected, what = v.cfg.RejectRuntimeDefaultSeccompAdjustment, "the runtime default seccomp profile"
	case typ == api.SecurityProfile_LOCALHOST:
		rejected, what = v.cfg.RejectCustomSeccompAdjustment, fmt.Sprintf("the custom seccomp profile %q", profile.GetLocalhostRef())
	default:
		rejected = v.cfg.RejectUnconfinedSeccompAdjustment || v.cfg.RejectRuntimeDefaultSeccompAdjustment || v.cfg.RejectCustomSeccompAdjustment
		what = fmt.Sprintf("a seccomp profile of unknown type %d", int32(typ))
	}
	if !rejected {
		return nil
	}
	return []error{fmt.Errorf("plugin %q set the seccomp policy of a container with %s, which is not allowed", owner, what)}
}

// checkNamespaces rejects every namespace adjusted by a plugin.
func (v *Validator) checkNamespaces(owners *api.FieldOwners) []error {
	if !v.cfg.RejectNamespaceAdjustment {
		return nil
	}
	return compoundProblems(owners, api.Field_Namespace, "namespace")
}

// checkSysctls rejects every sysctl adjusted by a plugin.
func (v *Validator) checkSysctls(owners *api.FieldOwners) []error {
	if !v.cfg.RejectSysctlAdjustment {
		return nil
	}
	return compoundProblems(owners, api.Field_Sysctl, "sysctl")
}

// compoundProblems returns one problem per owned entry of a compound
// field, in entry order.
func compoundProblems(owners *api.FieldOwners, field api.Field, what string) []error {
	entries := owners.GetCompound()[int32(field)].GetOwners()
	var problems []error
	for _, entry := range slices.Sorted(maps.Keys(entries)) {
		verb := "adjusted"
		owner, removed := api.IsMarkedForRemoval(entries[entry]) // "-name": the plugin removed it
		if removed {
			verb = "removed"
		}
		problems = append(problems, fmt.Errorf("plugin %q %s %s %q, which is not allowed", owner, verb, what, entry))
	}
	return problems
}
