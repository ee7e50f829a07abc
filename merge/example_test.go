package merge_test

import (
	"fmt"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/merge"
)

func Example() {
	ctr := &api.Container{Id: "c1", Env: []string{"PATH=/bin"}}
	owners := merge.NewOwners()
	adj := merge.NewAdjustment(owners, ctr)

	// Plugins answer in order; each would be shown adj.Container().
	_ = adj.Apply("10-gpu", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "GPU", Value: "0"}}})
	_ = adj.Apply("20-paths", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "PATH", Value: "/usr/bin"}}})
	err := adj.Apply("30-other", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "GPU", Value: "1"}}})

	fmt.Println(adj.Container().GetEnv())
	owner, _ := owners.Owner("c1", api.Field_Env, "GPU")
	fmt.Println("GPU set by", owner)
	fmt.Println(err)
	// Output:
	// [GPU=0 PATH=/usr/bin]
	// GPU set by 10-gpu
	// plugins "30-other" and "10-gpu" both tried to set Env "GPU" of container "c1"
}
