package api_test

import (
	"fmt"

	"github.com/containerd/nri/pkg/api"
)

func ExampleEventMask() {
	mask := api.MustParseEventMask("RunPodSandbox,StopPodSandbox")
	mask.Set(api.Event_CREATE_CONTAINER) // changes mask, as upstream
	mask.Clear(api.Event_STOP_POD_SANDBOX)
	fmt.Printf("%#x %s %v\n", int32(mask), mask.PrettyString(), mask.IsSet(api.Event_CREATE_CONTAINER))
	// Output: 0x9 RunPodSandbox,CreateContainer true
}
