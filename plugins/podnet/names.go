package podnet

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"strings"
)

// podIfName is the pod's interface inside its network namespace.
const podIfName = "eth0"

// HostVethPrefix starts the name of every host veth nri-podnet creates
// (and port security guards).
const HostVethPrefix = "nrp"

// hostVethName is the name of the host end of a pod's veth pair.
func hostVethName(podID string) string {
	sum := sha256.Sum256([]byte(podID))
	return HostVethPrefix + hex.EncodeToString(sum[:6])
}

// isHostVethName reports whether name is one hostVethName gives: the
// prefix and 12 lower-case hex digits.
func isHostVethName(name string) bool {
	digits, ok := strings.CutPrefix(name, HostVethPrefix)
	if !ok || len(digits) != 12 {
		return false
	}
	for _, c := range digits {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// podMAC is the pod interface's hardware address: locally administered,
// unicast, derived from the pod ID.
func podMAC(podID string) net.HardwareAddr {
	sum := sha256.Sum256([]byte("mac:" + podID))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = (mac[0] | 0x02) &^ 0x01
	return mac
}

// bridgeMAC is the bridge's hardware address: locally administered,
// unicast, derived from its name. A bridge whose address was set keeps
// it; one left to the kernel takes the lowest of its ports' and changes
// when that port goes, and the pods' neighbour entries for the gateway
// then point nowhere until they expire (seconds of lost replies).
func bridgeMAC(bridge string) net.HardwareAddr {
	sum := sha256.Sum256([]byte("bridge-mac:" + bridge))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = (mac[0] | 0x02) &^ 0x01
	return mac
}
