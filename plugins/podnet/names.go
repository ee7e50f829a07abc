package podnet

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
)

// podIfName is the pod's interface inside its network namespace.
const podIfName = "eth0"

// hostVethName is the name of the host end of a pod's veth pair.
func hostVethName(podID string) string {
	sum := sha256.Sum256([]byte(podID))
	return "nrp" + hex.EncodeToString(sum[:6])
}

// podMAC is the pod interface's hardware address: locally administered,
// unicast, derived from the pod ID.
func podMAC(podID string) net.HardwareAddr {
	sum := sha256.Sum256([]byte("mac:" + podID))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = (mac[0] | 0x02) &^ 0x01
	return mac
}
