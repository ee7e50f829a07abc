package dra

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// Config is what a [Driver] needs.
type Config struct {
	// Client talks to the API server (claims' status, ResourceSlices).
	Client kubernetes.Interface
	// NodeName is this node's: the pool of every device.
	NodeName string
	// StateDir holds the prepared claims (STATEDIR/claims).
	StateDir string
	// Networks are the node's secondary networks, one device each.
	Networks []multinet.Network
	// Logger; nil discards.
	Logger *slog.Logger
}

// Driver is the DRA kubelet plugin of nri-podnet's secondary networks,
// and the source of each pod's secondary interfaces
// ([github.com/nrinet/nrinet/plugins/podnet.Secondary]).
type Driver struct {
	client kubernetes.Interface
	node   string
	log    *slog.Logger
	nets   map[string]multinet.Network
	list   []multinet.Network
	claims *store
	helper *kubeletplugin.Helper
	status *writer // the claims' status writes, in order
	stop   sync.Once
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// New returns a driver that knows the claims prepared before (a restart).
// It writes the claims' status on a goroutine of its own until Stop.
func New(cfg Config) (*Driver, error) {
	if cfg.Client == nil || cfg.NodeName == "" || cfg.StateDir == "" {
		return nil, errors.New("dra: Client, NodeName and StateDir are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := openStore(filepath.Join(cfg.StateDir, "claims"))
	if err != nil {
		return nil, err
	}
	d := &Driver{client: cfg.Client, node: cfg.NodeName, log: cfg.Logger, nets: map[string]multinet.Network{}, list: cfg.Networks, claims: s}
	d.status = newWriter(d.apply)
	for _, n := range cfg.Networks {
		d.nets[n.Name] = n
	}
	return d, nil
}

// Start registers the driver with the kubelet (kubeletplugin's helper;
// opts may set its directories) and publishes the node's ResourceSlice.
// Stop ends both.
func (d *Driver) Start(ctx context.Context, opts ...kubeletplugin.Option) error {
	opts = append([]kubeletplugin.Option{
		kubeletplugin.DriverName(DriverName),
		kubeletplugin.KubeClient(d.client),
		kubeletplugin.NodeName(d.node),
		kubeletplugin.HealthService(false),
	}, opts...)
	h, err := kubeletplugin.Start(ctx, d, opts...)
	if err != nil {
		return fmt.Errorf("dra: starting the kubelet plugin: %w", err)
	}
	d.helper = h
	res := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		d.node: {Slices: []resourceslice.Slice{{Devices: Devices(d.list)}}},
	}}
	if err := h.PublishResources(ctx, res); err != nil {
		h.Stop()
		return fmt.Errorf("dra: publishing the ResourceSlice: %w", err)
	}
	return nil
}

// Stop unregisters from the kubelet, stops publishing (the ResourceSlice
// stays), writes the claim statuses still queued (each bounded by 5 s)
// and stops the status goroutine. A second Stop does nothing.
func (d *Driver) Stop() {
	d.stop.Do(func() {
		if d.helper != nil {
			d.helper.Stop()
		}
		d.status.close()
	})
}

// WaitStatus returns when the claim statuses queued so far are written
// (or their writes failed, which is logged).
func (d *Driver) WaitStatus() { d.status.wait() }

// PrepareResourceClaims checks each claim's devices of this driver (on
// this node, a known network, a host network's device for one pod only)
// and records the claim for its pods' RunPodSandbox.
func (d *Driver) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		out[c.UID] = d.prepare(c)
	}
	return out, nil
}

func (d *Driver) prepare(c *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	name := c.Namespace + "/" + c.Name
	fail := func(format string, args ...any) kubeletplugin.PrepareResult {
		err := fmt.Errorf("%s: claim %s: "+format, append([]any{DriverName, name}, args...)...)
		d.log.Warn("refused a claim", "error", err)
		return kubeletplugin.PrepareResult{Err: err}
	}
	if c.Status.Allocation == nil {
		return fail("not allocated")
	}
	p := Prepared{UID: string(c.UID), Namespace: c.Namespace, Name: c.Name}
	for _, r := range c.Status.ReservedFor {
		if r.APIGroup == "" && r.Resource == "pods" {
			p.Pods = append(p.Pods, string(r.UID))
		}
	}
	var res kubeletplugin.PrepareResult
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != DriverName {
			continue
		}
		if r.Pool != d.node {
			return fail("device %s of pool %q is not this node's (%q)", r.Device, r.Pool, d.node)
		}
		n, ok := d.nets[r.Device]
		if !ok {
			return fail("request %s: device %q: %v", r.Request, r.Device, &multinet.UnknownNetworkError{Network: r.Device})
		}
		if n.Kind == multinet.KindHost && len(p.Pods) > 1 {
			return fail("device %q moves host interface %q into one pod, and the claim is reserved for %d", r.Device, n.Interface, len(p.Pods))
		}
		pd := PreparedDevice{Request: r.Request, Device: r.Device}
		if r.ShareID != nil {
			pd.ShareID = string(*r.ShareID)
		}
		p.Devices = append(p.Devices, pd)
		res.Devices = append(res.Devices, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device, ShareID: r.ShareID})
	}
	if err := d.claims.put(p); err != nil {
		return kubeletplugin.PrepareResult{Err: err}
	}
	return res
}

// UnprepareResourceClaims forgets the claims. Their pods' interfaces
// went at StopPodSandbox, which comes first.
func (d *Driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = d.claims.drop(string(c.UID))
	}
	return out, nil
}

// HandleError logs errors of the background work (publishing the
// ResourceSlice); all of them are retried.
func (d *Driver) HandleError(_ context.Context, err error, msg string) {
	d.log.Error(msg, "error", err)
}

// WatchHealthStatus: no health reports.
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

// ref is what the driver keeps in a multinet request: the claim's UID and
// the device's request, name and share.
func ref(c Prepared, dev PreparedDevice) string {
	return strings.Join([]string{c.UID, dev.Request, dev.Device, dev.ShareID}, "|")
}

func parseRef(s string) (claimUID string, dev PreparedDevice, ok bool) {
	f := strings.Split(s, "|")
	if len(f) != 4 {
		return "", PreparedDevice{}, false
	}
	return f[0], PreparedDevice{Request: f[1], Device: f[2], ShareID: f[3]}, true
}

// Requests lists the devices of the claims prepared for the pod, by
// claim (namespace/name), then in the claim's allocation order.
//
// The kubelet prepares a claim once per node: a pod that joins a claim
// prepared before (a standalone claim in several pods' resourceClaims)
// gets no NodePrepareResources, and the claim's prepared pods do not name
// it. So where a claim of the pod's namespace is prepared on this node
// and not reserved for the pod as far as the driver knows, Requests reads
// the pod from the API server (one GET), and each claim it names that is
// prepared here (one GET each); a claim reserved for the pod gets it as
// one of its pods, on disk too. A pod of a namespace without such claims
// costs no API call. A read that fails fails the pod's start with the
// error (the kubelet retries it): it does not start without interfaces
// it may have claimed.
func (d *Driver) Requests(ctx context.Context, pod multinet.Pod) ([]multinet.Request, error) {
	if d.claims.othersIn(pod.Namespace, pod.UID) {
		if err := d.join(ctx, pod); err != nil {
			return nil, err
		}
	}
	var out []multinet.Request
	for _, c := range d.claims.forPod(pod.UID) {
		for _, dev := range c.Devices {
			out = append(out, multinet.Request{Claim: c.Namespace + "/" + c.Name, Network: dev.Device, Ref: ref(c, dev)})
		}
	}
	return out, nil
}

// join adds the pod to the prepared claims of its namespace that the API
// server has reserved for it (Requests).
func (d *Driver) join(ctx context.Context, pod multinet.Pod) error {
	name := pod.Namespace + "/" + pod.Name
	p, err := d.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // gone: nothing to join
	}
	if err != nil {
		return fmt.Errorf("%s: pod %s: reading its resource claims: %w", DriverName, name, err)
	}
	if string(p.UID) != pod.UID {
		return nil // another pod of the name: not this one's claims
	}
	claims := map[string]bool{}
	for _, c := range p.Spec.ResourceClaims {
		if c.ResourceClaimName != nil {
			claims[*c.ResourceClaimName] = true
		}
	}
	for _, st := range p.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil {
			claims[*st.ResourceClaimName] = true
		}
	}
	for _, cn := range slices.Sorted(maps.Keys(claims)) {
		prep, ok := d.claims.byName(pod.Namespace, cn)
		if !ok || slices.Contains(prep.Pods, pod.UID) {
			continue
		}
		rc, err := d.client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, cn, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: pod %s: reading claim %s/%s: %w", DriverName, name, pod.Namespace, cn, err)
		}
		if string(rc.UID) != prep.UID || !slices.ContainsFunc(rc.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool {
			return r.APIGroup == "" && r.Resource == "pods" && string(r.UID) == pod.UID
		}) {
			continue
		}
		err = d.claims.join(prep.UID, pod.UID, func(c Prepared) error {
			for _, dev := range c.Devices {
				if n := d.nets[dev.Device]; n.Kind == multinet.KindHost && len(c.Pods) > 0 {
					return fmt.Errorf("%s: claim %s/%s: device %q moves host interface %q into one pod, which it is in already; pod %s joins it",
						DriverName, c.Namespace, c.Name, dev.Device, n.Interface, name)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		d.log.Info("pod joined a claim prepared before", "pod", name, "claim", pod.Namespace+"/"+cn)
	}
	return nil
}
