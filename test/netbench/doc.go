// Package netbench compares pod network setup and teardown through NRI:
// nri-podnet (native netlink, persistent IPAM) against nri-cni running the
// CNI bridge and host-local reference plugins, both launched by the nrinet
// runtime library, in the same benchmark run. Root only.
//
//	go test -run '^$' -bench . -benchtime 100x -count 5 ./test/netbench
package netbench
