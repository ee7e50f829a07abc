package dra

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// DriverName is the DRA driver's name: DeviceClasses select it, and the
// ResourceSlices and claim statuses carry it.
const DriverName = "podnet.nrinet.io"

// Device attributes, in the driver's domain (CEL:
// device.attributes["podnet.nrinet.io"].network).
const (
	// AttrNetwork is the network's name (the device's name too).
	AttrNetwork = "network"
	// AttrKind is bridge, macvlan or host.
	AttrKind = "kind"
	// AttrInterface is a host network's host interface.
	AttrInterface = "interface"
)

// Devices are the node's devices, one per network: a bridge or macvlan
// network may be allocated to any number of claims at once
// (allowMultipleAllocations, Kubernetes' DRAConsumableCapacity, beta
// and on by default since v1.36), a host network to one.
func Devices(nets []multinet.Network) []resourceapi.Device {
	out := make([]resourceapi.Device, 0, len(nets))
	for _, n := range nets {
		d := resourceapi.Device{
			Name: n.Name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				AttrNetwork: {StringValue: ptr.To(n.Name)},
				AttrKind:    {StringValue: ptr.To(string(n.Kind))},
			},
		}
		if n.Kind == multinet.KindHost {
			d.Attributes[AttrInterface] = resourceapi.DeviceAttribute{StringValue: ptr.To(n.Interface)}
		} else {
			d.AllowMultipleAllocations = ptr.To(true)
		}
		out = append(out, d)
	}
	return out
}
