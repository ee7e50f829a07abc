package dra_test

import (
	"fmt"

	"github.com/nrinet/nrinet/plugins/podnet/dra"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

func ExampleDevices() {
	for _, d := range dra.Devices([]multinet.Network{
		{Name: "blue", Kind: multinet.KindBridge, Bridge: "nrblue0", Subnets: []string{"198.18.100.0/24"}},
		{Name: "nic2", Kind: multinet.KindHost, Interface: "eth2"},
	}) {
		shared := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
		fmt.Println(d.Name, *d.Attributes[dra.AttrKind].StringValue, "shared:", shared)
	}
	// Output:
	// blue bridge shared: true
	// nic2 host shared: false
}
