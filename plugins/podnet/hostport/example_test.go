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

// Publish a host port that the node also reaches on 127.0.0.1 (curl
// http://127.0.0.1:8080 on the node), for pods behind the bridge
// nrinet0: the guard against CVE-2020-8558, route_localnet on nrinet0
// and the masquerade come with the first host port and go with the last.
func ExampleWithLocalhost() {
	m, err := hostport.New(hostport.WithLocalhost("nrinet0"))
	if err != nil {
		log.Fatal(err)
	}
	pod := hostport.Pod{
		PodRef:   hostport.PodRef{ID: "4f1c", Namespace: "default", Name: "web"},
		Addrs:    []netip.Addr{netip.MustParseAddr("198.18.1.5")},
		Mappings: []hostport.Mapping{{Protocol: hostport.TCP, HostPort: 8080, ContainerPort: 80}},
	}
	if err := m.Add(pod); err != nil {
		log.Fatal(err)
	}
	rules, err := m.Rules()
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rules {
		if r.Chain == hostport.ChainGuard {
			fmt.Printf("%s: %d packets dropped\n", r.Comment, r.Packets)
		}
	}
	if err := m.Remove(pod.ID); err != nil { // the last host port: route_localnet off, then the table goes
		log.Fatal(err)
	}
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
