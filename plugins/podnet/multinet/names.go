package multinet

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
)

// HostVethPrefix starts the name of the host end of every veth of a
// bridge network ("nrm" and 12 hex digits).
const HostVethPrefix = "nrm"

// defaultMTU is a bridge network's MTU when it sets none.
const defaultMTU = 1500

// hostVethName is the host end of owner's interface ifName.
func hostVethName(owner, ifName string) string {
	sum := sha256.Sum256([]byte(owner + "/" + ifName))
	return HostVethPrefix + hex.EncodeToString(sum[:6])
}

// ifMAC is the MAC of owner's interface ifName (bridge and macvlan
// networks): locally administered, unicast, the same after a restart.
func ifMAC(owner, ifName string) net.HardwareAddr {
	sum := sha256.Sum256([]byte("multinet-mac:" + owner + "/" + ifName))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = (mac[0] | 0x02) &^ 0x01
	return mac
}

// bridgeMAC is a bridge network's bridge's MAC, fixed so that it does not
// follow its ports.
func bridgeMAC(bridge string) net.HardwareAddr {
	sum := sha256.Sum256([]byte("multinet-bridge-mac:" + bridge))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = (mac[0] | 0x02) &^ 0x01
	return mac
}
