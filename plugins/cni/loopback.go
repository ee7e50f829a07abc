package cni

import "github.com/containernetworking/cni/libcni"

// The loopback network, as containerd runs it before the pod's network
// unless use_internal_loopback is set (go-cni's WithLoNetwork): a network
// named LoopbackNetwork, cniVersion 0.3.1, of one plugin of type
// "loopback", on the interface LoopbackIfName.
const (
	LoopbackNetwork = "cni-loopback"
	LoopbackIfName  = "lo"
)

var loopbackConf = []byte(`{"cniVersion": "0.3.1", "name": "` + LoopbackNetwork + `", "plugins": [{"type": "loopback"}]}`)

// loopbackList returns the loopback network's configuration list.
func loopbackList() *libcni.NetworkConfigList {
	list, err := libcni.NetworkConfFromBytes(loopbackConf)
	if err != nil {
		panic("cni: the loopback network's configuration does not parse: " + err.Error())
	}
	return list
}
