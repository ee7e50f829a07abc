// Package dra is nri-podnet's DRA driver for secondary networks
// (Kubernetes Dynamic Resource Allocation, KEP-4817's device status; see
// docs/multinetwork.md).
//
// A [Driver] publishes the node's secondary networks as devices of one
// pool named after the node ([Devices]: one per network; bridge and
// macvlan networks may be allocated to many claims at once), registers
// with the kubelet as driver [DriverName] through
// k8s.io/dynamic-resource-allocation's kubeletplugin helper, and answers
// NodePrepareResources by checking each claim's devices and recording the
// claim (STATEDIR/claims/UID.json, so that a restarted driver knows it)
// for the pods it is reserved for. It is the source of each pod's
// secondary interfaces for nri-podnet
// ([github.com/nrinet/nrinet/plugins/podnet.Secondary]): Requests lists
// the pod's devices; Attached writes each claim's status.devices[] with
// networkData and a Ready condition; Detached removes those entries.
package dra
