package multinet_test

import (
	"context"
	"fmt"
	"log"

	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// A pod (its sandbox ID and network namespace) gets net1 on a bridge
// network with its own subnet, and gives it back. Needs root: not run.
func ExampleManager_Attach() {
	cfg, err := multinet.FromBytes([]byte(`{
	  "stateDir": "/var/lib/nri-podnet/multinet",
	  "networks": [{"name": "blue", "kind": "bridge", "bridge": "nrblue0", "subnets": ["198.18.100.0/24"]}]
	}`))
	if err != nil {
		log.Fatal(err)
	}
	m, err := multinet.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	itfs, err := m.Attach(ctx, "SANDBOXID", multinet.Pod{Namespace: "default", Name: "web"}, "/var/run/netns/POD", []multinet.Request{{Claim: "default/blue", Network: "blue", IfName: "net1"}})
	if err != nil {
		log.Fatal(err) // a *multinet.RequestError naming the claim and the interface
	}
	fmt.Println(itfs[0].Name, itfs[0].MAC, itfs[0].Addrs)
	if err := m.Detach(ctx, "SANDBOXID", "/var/run/netns/POD"); err != nil {
		log.Fatal(err)
	}
}

func ExampleFromBytes() {
	_, err := multinet.FromBytes([]byte(`{"stateDir": "/x", "networks": [{"name": "lan", "kind": "macvlan", "subnets": ["198.18.0.0/24"]}]}`))
	fmt.Println(err)
	// Output: multinet: network "lan": master "" is not a valid interface name
}
