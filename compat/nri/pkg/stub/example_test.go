package stub_test

import (
	"context"
	"fmt"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

// envInjector adds an environment variable to every container created.
type envInjector struct{}

func (envInjector) CreateContainer(_ context.Context, _ *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adjust := &api.ContainerAdjustment{}
	adjust.AddEnv("INJECTED", "yes")
	return adjust, nil, nil
}

// A plugin implements the interfaces of the events it handles; New
// subscribes it to those.
func ExampleNew() {
	s, err := stub.New(envInjector{},
		stub.WithPluginName("env-injector"),
		stub.WithPluginIdx("50"),
		stub.WithLogger(&logRecorder{}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.RuntimeNRIVersion(), s.RequestTimeout())
	// In a real plugin: err = s.Run(ctx)
	// Output: unknown 2s
}
