package dra

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"

	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// The Ready condition's reasons in a claim's status.devices[].
const (
	ReasonAttached     = "InterfaceAttached"
	ReasonAttachFailed = "AttachFailed"
)

// statusTimeout bounds one claim's status write.
const statusTimeout = 5 * time.Second

// maxMessage is a condition message's limit (metav1.Condition).
const maxMessage = 32768

// Attached queues the status of the pod's claims (written in the
// background, in order; [Driver.WaitStatus] waits for it): for each
// device an entry with its networkData (interface name, MAC, addresses)
// and Ready True, or, if the attach failed, Ready False with the error.
// A failed write is logged: the pod runs all the same.
func (d *Driver) Attached(_ context.Context, _ string, reqs []multinet.Request, itfs []multinet.Interface, err error) {
	// The entries by claim UID, completed before they go into a status
	// (WithDevices copies them).
	entries := map[string][]*resourceapply.AllocatedDeviceStatusApplyConfiguration{}
	entry := func(r string) *resourceapply.AllocatedDeviceStatusApplyConfiguration {
		uid, dev, ok := parseRef(r)
		if !ok {
			return nil
		}
		e := resourceapply.AllocatedDeviceStatus().WithDriver(DriverName).WithPool(d.node).WithDevice(dev.Device)
		if dev.ShareID != "" {
			e.WithShareID(dev.ShareID)
		}
		entries[uid] = append(entries[uid], e)
		return e
	}
	now := metav1.Now()
	if err != nil {
		msg := err.Error()
		if len(msg) > maxMessage {
			msg = msg[:maxMessage]
		}
		for _, r := range reqs {
			if e := entry(r.Ref); e != nil {
				e.WithConditions(metav1apply.Condition().WithType("Ready").WithStatus(metav1.ConditionFalse).
					WithReason(ReasonAttachFailed).WithMessage(msg).WithLastTransitionTime(now))
			}
		}
	} else {
		for _, itf := range itfs {
			e := entry(itf.Ref)
			if e == nil {
				continue
			}
			nd := resourceapply.NetworkDeviceData().WithInterfaceName(itf.Name).WithHardwareAddress(itf.MAC)
			for _, a := range itf.Addrs {
				nd.WithIPs(a.String())
			}
			e.WithNetworkData(nd).WithConditions(metav1apply.Condition().WithType("Ready").WithStatus(metav1.ConditionTrue).
				WithReason(ReasonAttached).WithMessage(fmt.Sprintf("%s of network %s", itf.Name, itf.Network)).WithLastTransitionTime(now))
		}
	}
	for uid, es := range entries {
		d.status.add(statusWrite{uid: uid, st: resourceapply.ResourceClaimStatus().WithDevices(es...)})
	}
}

// Detached queues the removal of the driver's entries of the pod's
// interfaces from their claims' status.
func (d *Driver) Detached(_ context.Context, _ string, itfs []multinet.Interface) {
	done := map[string]bool{}
	for _, itf := range itfs {
		uid, _, ok := parseRef(itf.Ref)
		if !ok || done[uid] {
			continue
		}
		done[uid] = true
		d.status.add(statusWrite{uid: uid, st: resourceapply.ResourceClaimStatus()})
	}
}

// apply writes the driver's part of a claim's status (server-side apply,
// field manager DriverName: what the driver wrote before and does not
// write now goes), on the status writer's goroutine.
func (d *Driver) apply(sw statusWrite) {
	c, ok := d.claims.get(sw.uid)
	if !ok {
		d.log.Warn("no prepared claim for a status", "claimUID", sw.uid)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	ac := resourceapply.ResourceClaim(c.Name, c.Namespace).WithUID(types.UID(c.UID)).WithStatus(sw.st)
	_, err := d.client.ResourceV1().ResourceClaims(c.Namespace).ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: DriverName, Force: true})
	if err != nil {
		d.log.Warn("writing a claim's status", "claim", c.Namespace+"/"+c.Name, "error", err)
	}
}
