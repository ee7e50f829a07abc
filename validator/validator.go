package validator

import (
	"context"
	"slices"
	"strings"

	"github.com/nrinet/nrinet/api"
)

// Identity of the default validator among the plugins, as upstream.
const (
	// Name is the plugin name of the default validator.
	Name = "default-validator"
	// Index is the plugin index of the default validator, which runs
	// before every other validator.
	Index = "00"
)

// Validator is the default validator. Create it with New.
type Validator struct {
	cfg Config
}

// New returns a validator applying cfg. The configuration is not checked;
// call cfg.Validate first. An invalid required plugin name can never be
// present, so it makes the validator reject every pod and container.
func New(cfg Config) *Validator {
	cfg.RequiredPlugins = slices.Clone(cfg.RequiredPlugins)
	return &Validator{cfg: cfg}
}

// Name returns the plugin name, "default-validator".
func (v *Validator) Name() string { return Name }

// Index returns the plugin index, "00".
func (v *Validator) Index() string { return Index }

// Enabled reports whether the validator checks anything at all.
func (v *Validator) Enabled() bool { return v.cfg.Enable }

// Rejection is the error with which the validator refuses a pod or
// container. Problems lists every reason, each naming the plugin or
// annotation and the value concerned.
type Rejection struct {
	Problems []error
}

// Error lists the problems separated by "; ".
func (r *Rejection) Error() string {
	msgs := make([]string, len(r.Problems))
	for i, p := range r.Problems {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (r *Rejection) Unwrap() []error { return r.Problems }

// reject returns a *Rejection of problems, or nil if there are none.
func reject(problems []error) error {
	if len(problems) == 0 {
		return nil
	}
	return &Rejection{Problems: problems}
}

// ValidateContainerAdjustment accepts (nil) or rejects (a *Rejection) the
// merged adjustment of a container being created. It applies the
// configured adjustment rules, using the ownership record in req to name
// the plugins responsible, and the required-plugins check against
// req.Plugins.
func (v *Validator) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if !v.cfg.Enable {
		return nil
	}
	ctr := req.GetContainer()
	owners := req.GetOwners().GetOwners()[ctr.GetId()]
	var problems []error
	problems = append(problems, v.checkHooks(owners)...)
	problems = append(problems, v.checkSeccomp(owners, ctr.GetLinux().GetSeccompProfile())...)
	problems = append(problems, v.checkNamespaces(owners)...)
	problems = append(problems, v.checkSysctls(owners)...)
	problems = append(problems, v.checkRequired(req.GetPod().GetAnnotations(), ctr.GetName(), req.GetPlugins())...)
	return reject(problems)
}

// ValidatePodSandbox accepts (nil) or rejects (a *Rejection) a pod about to
// be created, given the plugins currently active: every configured
// required plugin and every plugin the pod-level required-plugins
// annotation lists must be among them, unless the pod tolerates missing
// plugins.
func (v *Validator) ValidatePodSandbox(ctx context.Context, pod *api.PodSandbox, plugins []*api.PluginInstance) error {
	if !v.cfg.Enable {
		return nil
	}
	return reject(v.checkRequired(pod.GetAnnotations(), "", plugins))
}
