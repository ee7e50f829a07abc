// Package pins holds the versions of the outside software nrinet builds,
// tests and releases against (Kubernetes, etcd, CoreDNS, containerd,
// CRI-O, upstream NRI, cri-tools, the CNI plugins, promtool), pinned in one
// file, versions.env, that hack/*.sh source and the Makefile includes too.
// A version bump is one line there.
//
// Go module dependencies are not here: go.mod pins them, and TestPins
// checks that a module both name (containerd, CRI-O, upstream NRI) agrees.
package pins
