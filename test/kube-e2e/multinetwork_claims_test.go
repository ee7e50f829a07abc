package kubee2e

import (
	"fmt"
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The multi-network stage's look at the claims' status and the pods'
// events.

// driverResults are the claim's allocated devices of nri-podnet's
// driver, in allocation order.
func driverResults(c *resourcev1.ResourceClaim) []resourcev1.DeviceRequestAllocationResult {
	if c.Status.Allocation == nil {
		return nil
	}
	var out []resourcev1.DeviceRequestAllocationResult
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver == draDriver {
			out = append(out, r)
		}
	}
	return out
}

// waitClaimsAttached waits until each claim of the pod's interfaces has,
// for the interface's device (driver, pool, device, share), a
// status.devices[] entry with the interface's networkData and Ready True.
func (s *multinetStage) waitClaimsAttached(p *multinetPod) {
	t := s.t
	t.Helper()
	pool := s.nodes[p.suffix].name
	waitFor(t, "pod "+p.name+"'s claims' status", claimStatusTimeout, 250*time.Millisecond, func() (bool, string) {
		for _, itf := range p.itfs {
			c, err := s.cp.client.ResourceV1().ResourceClaims(s.ns).Get(t.Context(), itf.claim, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			e, ok := deviceStatus(c, itf.result)
			if !ok {
				return false, fmt.Sprintf("claim %s: no status of device %s/%s/%s: %+v", itf.claim, draDriver, pool, itf.network, c.Status.Devices)
			}
			nd := e.NetworkData
			switch {
			case nd == nil:
				return false, fmt.Sprintf("claim %s: device %s: no networkData", itf.claim, itf.network)
			case nd.InterfaceName != itf.name || nd.HardwareAddress != itf.mac || !sameAddrs(nd.IPs, itf.addrs):
				return false, fmt.Sprintf("claim %s: device %s: networkData %+v, the pod's %s", itf.claim, itf.network, *nd, itf)
			}
			ready := meta(e.Conditions, "Ready")
			if ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason != "InterfaceAttached" {
				return false, fmt.Sprintf("claim %s: device %s: conditions %+v", itf.claim, itf.network, e.Conditions)
			}
		}
		return true, ""
	})
}

// deviceStatus finds the claim's status.devices[] entry of the allocated
// device r.
func deviceStatus(c *resourcev1.ResourceClaim, r resourcev1.DeviceRequestAllocationResult) (resourcev1.AllocatedDeviceStatus, bool) {
	for _, e := range c.Status.Devices {
		if e.Driver == r.Driver && e.Pool == r.Pool && e.Device == r.Device && ptr.Deref(e.ShareID, "") == string(ptr.Deref(r.ShareID, "")) {
			return e, true
		}
	}
	return resourcev1.AllocatedDeviceStatus{}, false
}

// meta returns the condition of type typ, or nil.
func meta(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// waitClaimFailed waits until every device of nri-podnet's driver in
// claim has a status.devices[] entry with Ready False (AttachFailed) and a
// message containing want, and returns the message.
func (s *multinetStage) waitClaimFailed(claim, want string) string {
	t := s.t
	t.Helper()
	var msg string
	waitFor(t, "claim "+claim+"'s status to say the attach failed", claimStatusTimeout, 250*time.Millisecond, func() (bool, string) {
		c, err := s.cp.client.ResourceV1().ResourceClaims(s.ns).Get(t.Context(), claim, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		results := driverResults(c)
		if len(results) == 0 {
			return false, "not allocated"
		}
		for _, r := range results {
			e, ok := deviceStatus(c, r)
			if !ok {
				return false, fmt.Sprintf("no status of device %s: %+v", r.Device, c.Status.Devices)
			}
			ready := meta(e.Conditions, "Ready")
			if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != "AttachFailed" || !strings.Contains(ready.Message, want) {
				return false, fmt.Sprintf("device %s: conditions %+v", r.Device, e.Conditions)
			}
			msg = ready.Message
		}
		return true, ""
	})
	return msg
}

// waitEvent waits for an event of the pod with reason whose message
// contains want, and returns the message.
func (s *multinetStage) waitEvent(pod, reason, want string) string {
	t := s.t
	t.Helper()
	var msg string
	waitFor(t, fmt.Sprintf("an event %s of pod %s saying %q", reason, pod, want), retryTimeout, 250*time.Millisecond, func() (bool, string) {
		list, err := s.cp.client.CoreV1().Events(s.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Reason == reason && strings.Contains(e.Message, want) {
				msg = e.Message
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "\n")
	})
	return msg
}
