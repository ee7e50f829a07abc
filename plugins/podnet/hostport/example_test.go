package hostport_test

import (
	"errors"
	"fmt"
	"log"
	"net/netip"

	"github.com/nrinet/nrinet/plugins/podnet/hostport"
)

// Publish port 8080 of a pod as the node's TCP port 80 on every local
// address, then take it back.
func Example() {
	m, err := hostport.New() // the process's network namespace
	if err != nil {
		log.Fatal(err)
	}
	pod := hostport.Pod{
		PodRef:   hostport.PodRef{ID: "4f1c", Namespace: "default", Name: "web"},
		Addrs:    []netip.Addr{netip.MustParseAddr("198.18.1.5")},
		Mappings: []hostport.Mapping{{Protocol: hostport.TCP, HostPort: 80, ContainerPort: 8080}},
	}
	if err := m.Add(pod); err != nil {
		var conflict *hostport.ConflictError
		if errors.As(err, &conflict) {
			log.Fatalf("port held by %s", conflict.Holder)
		}
		log.Fatal(err)
	}
	defer m.Remove(pod.ID)
	fmt.Println(m.Counts())
}

// A mapping as it reads in errors and logs.
func ExampleMapping_String() {
	m := hostport.Mapping{Protocol: hostport.UDP, HostPort: 5353, ContainerPort: 53, HostIP: netip.MustParseAddr("fd00:198:18::1")}
	fmt.Println(m)
	fmt.Println(hostport.Mapping{Protocol: hostport.TCP, HostPort: 80, ContainerPort: 8080})
	// Output:
	// udp [fd00:198:18::1]:5353 -> 53
	// tcp *:80 -> 8080
}
