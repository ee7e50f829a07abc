package cri

import "path/filepath"

// NetNSDir is where sandbox network namespaces are bind-mounted, as
// iproute2 names them (ip netns list shows them).
const NetNSDir = "/run/netns"

// netnsName is the name of a sandbox's network namespace.
func netnsName(id string) string {
	if len(id) > 12 {
		id = id[:12]
	}
	return "nrinet-" + id
}

// netnsPath is where the named namespace is mounted.
func netnsPath(name string) string { return filepath.Join(NetNSDir, name) }
