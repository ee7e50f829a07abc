package validator_test

import (
	"context"
	"fmt"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/validator"
)

func Example() {
	v := validator.New(validator.Config{
		Enable:                           true,
		RejectOCIHookAdjustment:          true,
		RequiredPlugins:                  []string{"policy"},
		TolerateMissingPluginsAnnotation: api.TolerateMissingPluginsAnnotation,
	})
	ctx := context.Background()
	active := []*api.PluginInstance{{Name: "hooks", Index: "10"}, {Name: "policy", Index: "50"}}

	// A container into which plugin 10-hooks injected OCI hooks, in a pod
	// that also requires plugin "audit".
	req := &api.ValidateContainerAdjustmentRequest{
		Pod: &api.PodSandbox{Annotations: map[string]string{
			api.RequiredPluginsAnnotation + "/pod": `["audit"]`,
		}},
		Container: &api.Container{Id: "c1", Name: "app"},
		Owners: &api.OwningPlugins{Owners: map[string]*api.FieldOwners{
			"c1": {Simple: map[int32]string{int32(api.Field_OciHooks): "10-hooks"}},
		}},
		Plugins: active,
	}
	fmt.Println(v.ValidateContainerAdjustment(ctx, req))

	// A pod tolerating missing plugins may start before they run.
	pod := &api.PodSandbox{Annotations: map[string]string{api.TolerateMissingPluginsAnnotation: "true"}}
	fmt.Println(v.ValidatePodSandbox(ctx, pod, nil))
	// Output:
	// plugin "10-hooks" injected OCI hooks, which is not allowed; required plugin "audit" (from annotation "required-plugins.noderesource.dev/pod") is not present
	// <nil>
}
