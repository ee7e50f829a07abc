package portsec_test

import (
	"fmt"
	"net"

	"github.com/nrinet/nrinet/plugins/podnet/portsec"
)

// The link-local address a pod's port lets it send from, the kernel's
// EUI-64 address of the pod interface's MAC.
func ExampleLinkLocal() {
	mac, _ := net.ParseMAC("02:00:c6:13:a0:0a")
	fmt.Println(portsec.LinkLocal(mac))
	// Output: fe80::c6ff:fe13:a00a
}
