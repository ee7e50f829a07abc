package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/nrinet/nrinet/api"
)

// service serves the Plugin ttrpc service of one session by dispatching to
// the plugin's handlers. A request for an event the plugin has no handler
// for gets an empty response.
type service struct {
	sess *session
	stub *Stub
}

var _ api.PluginService = (*service)(nil)

func (svc *service) Configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	s, sess := svc.stub, svc.sess
	netExt := s.offeredExtension(req)
	info := RuntimeInfo{
		Name:                req.GetRuntimeName(),
		Version:             req.GetRuntimeVersion(),
		NRIVersion:          req.GetNRIVersion(),
		RegistrationTimeout: msOr(req.GetRegistrationTimeout(), api.DefaultRegistrationTimeout),
		RequestTimeout:      msOr(req.GetRequestTimeout(), api.DefaultRequestTimeout),
		NetworkExtension:    netExt,
	}
	if refused := s.refusal(req); refused != nil {
		sess.refuse(refused)
		return nil, refused
	}
	events := s.implemented
	if h, ok := s.handler.(ConfigureHandler); ok {
		ctx := context.WithValue(ctx, configuringKey{}, info)
		m, err := h.Configure(ctx, req.GetConfig(), req.GetRuntimeName(), req.GetRuntimeVersion())
		if err != nil {
			err = fmt.Errorf("plugin %q: Configure: %w", s.Name(), err)
			sess.setConfigError(err)
			return nil, err
		}
		if m != 0 {
			if extra := m &^ s.implemented; extra != 0 {
				err := fmt.Errorf("plugin %q: Configure subscribed to %s, which the plugin has no handler for", s.Name(), extra)
				sess.setConfigError(err)
				return nil, err
			}
			events = m
		}
	}
	if netExt == 0 {
		if events&api.NetworkEvents != 0 || s.implementsNetwork() {
			s.log.Warn("the runtime does not support the pod network extension; running as a plain NRI plugin: "+
				"networks returned from RunPodSandboxNetwork are dropped and PodSandboxStatus is not called",
				"runtime", req.GetRuntimeName(), "runtimeVersion", req.GetRuntimeVersion())
		}
		// An upstream runtime refuses a subscription with unknown bits.
		events &^= api.NetworkEvents
		if events == 0 {
			// A mask of 0 would subscribe to every classic event.
			err := fmt.Errorf("plugin %q handles only events of the pod network extension, which runtime %s %s does not support",
				s.Name(), req.GetRuntimeName(), req.GetRuntimeVersion())
			sess.setConfigError(err)
			return nil, err
		}
	}
	info.Events = events
	sess.mu.Lock()
	sess.info = info
	first := !sess.isConfig
	sess.isConfig = true
	sess.mu.Unlock()
	if first {
		close(sess.configured)
	}
	s.log.Info("configured", "runtime", req.GetRuntimeName(), "runtimeVersion", req.GetRuntimeVersion(), "events", events.String())
	rsp := &api.ConfigureResponse{Events: int32(events), FailurePolicy: s.cfg.failurePolicy}
	if netExt != 0 {
		rsp.NetworkExtension = &api.NetworkExtension{Version: api.NetworkExtensionVersion}
	}
	return rsp, nil
}

func msOr(ms int64, def time.Duration) time.Duration {
	if ms <= 0 {
		return def
	}
	return time.Duration(ms) * time.Millisecond
}

func (sess *session) setConfigError(err error) {
	sess.mu.Lock()
	sess.configErr = err
	sess.mu.Unlock()
}

// refuse records that the plugin refused the runtime: it is why Configure
// failed and why the session ends.
func (sess *session) refuse(err *NoNetworkExtensionError) {
	sess.mu.Lock()
	sess.configErr, sess.refused = err, err
	sess.mu.Unlock()
}

// Synchronize collects chunks while More is set and hands the whole state
// to the plugin with the last one.
func (svc *service) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	sess := svc.sess
	sess.mu.Lock()
	sess.syncPods = append(sess.syncPods, req.GetPods()...)
	sess.syncCtrs = append(sess.syncCtrs, req.GetContainers()...)
	sess.syncChunks++
	if req.GetMore() {
		sess.mu.Unlock()
		return &api.SynchronizeResponse{More: true}, nil
	}
	pods, ctrs, chunks := sess.syncPods, sess.syncCtrs, sess.syncChunks
	sess.syncPods, sess.syncCtrs, sess.syncChunks = nil, nil, 0
	sess.mu.Unlock()

	s := svc.stub
	s.log.Debug("synchronize", "pods", len(pods), "containers", len(ctrs), "chunks", chunks)
	var updates []*api.ContainerUpdate
	if h, ok := s.handler.(SynchronizeHandler); ok {
		var err error
		if updates, err = h.Synchronize(ctx, pods, ctrs); err != nil {
			return nil, fmt.Errorf("plugin %q: Synchronize: %w", s.Name(), err)
		}
	}
	sess.mu.Lock()
	sess.synced = true
	sess.mu.Unlock()
	return &api.SynchronizeResponse{Update: updates}, nil
}

func (svc *service) Shutdown(ctx context.Context, _ *api.Empty) (*api.Empty, error) {
	svc.stub.log.Info("runtime asked the plugin to shut down")
	svc.sess.mu.Lock()
	svc.sess.shutdown = true
	svc.sess.mu.Unlock()
	if h, ok := svc.stub.handler.(ShutdownHandler); ok {
		h.Shutdown(ctx)
	}
	return &api.Empty{}, nil
}

// wrap logs a handler's error and returns it unchanged: the runtime names
// the plugin and the event when it reports the error, so the text that
// crosses the wire is the handler's own.
func (svc *service) wrap(ev api.Event, err error) error {
	if err != nil {
		svc.stub.log.Warn("handler failed", "event", ev.Method(), "error", err)
	}
	return err
}

// podEvent calls a pod event handler, if the plugin has one.
func (svc *service) podEvent(ctx context.Context, ev api.Event, pod *api.PodSandbox) error {
	var err error
	switch ev {
	case api.Event_RUN_POD_SANDBOX:
		switch h := svc.stub.handler.(type) {
		case RunPodSandboxHandler:
			err = h.RunPodSandbox(ctx, pod)
		case RunPodSandboxNetworkHandler: // through StateChange: the network is dropped
			_, err = h.RunPodSandboxNetwork(ctx, pod)
		}
	case api.Event_STOP_POD_SANDBOX:
		if h, ok := svc.stub.handler.(StopPodSandboxHandler); ok {
			err = h.StopPodSandbox(ctx, pod)
		}
	case api.Event_REMOVE_POD_SANDBOX:
		if h, ok := svc.stub.handler.(RemovePodSandboxHandler); ok {
			err = h.RemovePodSandbox(ctx, pod)
		}
	case api.Event_POST_UPDATE_POD_SANDBOX:
		if h, ok := svc.stub.handler.(PostUpdatePodSandboxHandler); ok {
			err = h.PostUpdatePodSandbox(ctx, pod)
		}
	}
	return svc.wrap(ev, err)
}

// containerEvent calls a container event handler that returns nothing but
// an error, if the plugin has one.
func (svc *service) containerEvent(ctx context.Context, ev api.Event, pod *api.PodSandbox, ctr *api.Container) error {
	var err error
	h := svc.stub.handler
	switch ev {
	case api.Event_POST_CREATE_CONTAINER:
		if h, ok := h.(PostCreateContainerHandler); ok {
			err = h.PostCreateContainer(ctx, pod, ctr)
		}
	case api.Event_START_CONTAINER:
		if h, ok := h.(StartContainerHandler); ok {
			err = h.StartContainer(ctx, pod, ctr)
		}
	case api.Event_POST_START_CONTAINER:
		if h, ok := h.(PostStartContainerHandler); ok {
			err = h.PostStartContainer(ctx, pod, ctr)
		}
	case api.Event_POST_UPDATE_CONTAINER:
		if h, ok := h.(PostUpdateContainerHandler); ok {
			err = h.PostUpdateContainer(ctx, pod, ctr)
		}
	case api.Event_REMOVE_CONTAINER:
		if h, ok := h.(RemoveContainerHandler); ok {
			err = h.RemoveContainer(ctx, pod, ctr)
		}
	}
	return svc.wrap(ev, err)
}

func (svc *service) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	h, ok := svc.stub.handler.(RunPodSandboxNetworkHandler)
	if !ok {
		return &api.RunPodSandboxResponse{}, svc.podEvent(ctx, api.Event_RUN_POD_SANDBOX, req.GetPod())
	}
	if req.GetRuntimeOwnsNetwork() {
		// The runtime set the pod's network up itself: a network plugin
		// has no part in it (and its interfaces would clash with the
		// runtime's).
		svc.stub.log.Debug("not setting up the network of a pod whose network the runtime owns",
			"pod", req.GetPod().GetNamespace()+"/"+req.GetPod().GetName(), "sandbox", req.GetPod().GetId())
		return &api.RunPodSandboxResponse{}, nil
	}
	n, err := h.RunPodSandboxNetwork(ctx, req.GetPod())
	if err != nil {
		return nil, svc.wrap(api.Event_RUN_POD_SANDBOX, err)
	}
	if n == nil {
		return &api.RunPodSandboxResponse{}, nil
	}
	if info, _ := svc.sess.runtimeInfo(); info.NetworkExtension == 0 {
		return &api.RunPodSandboxResponse{}, nil // the runtime would ignore it
	}
	return &api.RunPodSandboxResponse{Adjust: &api.PodSandboxAdjustment{Network: n}}, nil
}

// PodSandboxStatus answers with the plugin's part of the pod's network, in
// both the typed form and the ip/additional_ips fields of containerd/nri
// PR #267.
func (svc *service) PodSandboxStatus(ctx context.Context, req *api.PodSandboxStatusRequest) (*api.PodSandboxStatusResponse, error) {
	h, ok := svc.stub.handler.(PodSandboxStatusHandler)
	if !ok {
		return &api.PodSandboxStatusResponse{}, nil
	}
	n, err := h.PodSandboxStatus(ctx, req.GetPod(), req.GetVerbose())
	if err != nil {
		return nil, svc.wrap(api.Event_POD_SANDBOX_STATUS, err)
	}
	rsp := &api.PodSandboxStatusResponse{Network: n}
	for i, ip := range n.GetIps() {
		if i == 0 {
			rsp.Ip = ip
		} else {
			rsp.AdditionalIps = append(rsp.AdditionalIps, ip)
		}
	}
	return rsp, nil
}

func (svc *service) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	if h, ok := svc.stub.handler.(UpdatePodSandboxHandler); ok {
		err := h.UpdatePodSandbox(ctx, req.GetPod(), req.GetOverheadLinuxResources(), req.GetLinuxResources())
		return &api.UpdatePodSandboxResponse{}, svc.wrap(api.Event_UPDATE_POD_SANDBOX, err)
	}
	return &api.UpdatePodSandboxResponse{}, nil
}

func (svc *service) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return &api.PostUpdatePodSandboxResponse{}, svc.podEvent(ctx, api.Event_POST_UPDATE_POD_SANDBOX, req.GetPod())
}

func (svc *service) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return &api.StopPodSandboxResponse{}, svc.podEvent(ctx, api.Event_STOP_POD_SANDBOX, req.GetPod())
}

func (svc *service) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return &api.RemovePodSandboxResponse{}, svc.podEvent(ctx, api.Event_REMOVE_POD_SANDBOX, req.GetPod())
}

func (svc *service) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	var (
		rsp = &api.CreateContainerResponse{}
		err error
	)
	switch h := svc.stub.handler.(type) {
	case CreateContainerHandler:
		rsp.Adjust, rsp.Update, err = h.CreateContainer(ctx, req.GetPod(), req.GetContainer())
	case CreateContainerEvictHandler:
		rsp.Adjust, rsp.Update, rsp.Evict, err = h.CreateContainerEvict(ctx, req.GetPod(), req.GetContainer())
	}
	if err != nil {
		return nil, svc.wrap(api.Event_CREATE_CONTAINER, err)
	}
	return rsp, nil
}

func (svc *service) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return &api.PostCreateContainerResponse{}, svc.containerEvent(ctx, api.Event_POST_CREATE_CONTAINER, req.GetPod(), req.GetContainer())
}

func (svc *service) StartContainer(ctx context.Context, req *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return &api.StartContainerResponse{}, svc.containerEvent(ctx, api.Event_START_CONTAINER, req.GetPod(), req.GetContainer())
}

func (svc *service) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return &api.PostStartContainerResponse{}, svc.containerEvent(ctx, api.Event_POST_START_CONTAINER, req.GetPod(), req.GetContainer())
}

func (svc *service) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	var (
		rsp = &api.UpdateContainerResponse{}
		err error
	)
	switch h := svc.stub.handler.(type) {
	case UpdateContainerHandler:
		rsp.Update, err = h.UpdateContainer(ctx, req.GetPod(), req.GetContainer(), req.GetLinuxResources())
	case UpdateContainerEvictHandler:
		rsp.Update, rsp.Evict, err = h.UpdateContainerEvict(ctx, req.GetPod(), req.GetContainer(), req.GetLinuxResources())
	}
	if err != nil {
		return nil, svc.wrap(api.Event_UPDATE_CONTAINER, err)
	}
	return rsp, nil
}

func (svc *service) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return &api.PostUpdateContainerResponse{}, svc.containerEvent(ctx, api.Event_POST_UPDATE_CONTAINER, req.GetPod(), req.GetContainer())
}

func (svc *service) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	h, ok := svc.stub.handler.(StopContainerHandler)
	if !ok {
		return &api.StopContainerResponse{}, nil
	}
	update, err := h.StopContainer(ctx, req.GetPod(), req.GetContainer())
	if err != nil {
		return nil, svc.wrap(api.Event_STOP_CONTAINER, err)
	}
	return &api.StopContainerResponse{Update: update}, nil
}

func (svc *service) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return &api.RemoveContainerResponse{}, svc.containerEvent(ctx, api.Event_REMOVE_CONTAINER, req.GetPod(), req.GetContainer())
}

// StateChange serves runtimes older than NRI v0.12, which deliver most
// events through this one call.
func (svc *service) StateChange(ctx context.Context, req *api.StateChangeEvent) (*api.Empty, error) {
	ev := req.GetEvent()
	var err error
	switch ev {
	case api.Event_RUN_POD_SANDBOX, api.Event_STOP_POD_SANDBOX, api.Event_REMOVE_POD_SANDBOX, api.Event_POST_UPDATE_POD_SANDBOX:
		err = svc.podEvent(ctx, ev, req.GetPod())
	case api.Event_POST_CREATE_CONTAINER, api.Event_START_CONTAINER, api.Event_POST_START_CONTAINER,
		api.Event_POST_UPDATE_CONTAINER, api.Event_REMOVE_CONTAINER:
		err = svc.containerEvent(ctx, ev, req.GetPod(), req.GetContainer())
	default:
		err = fmt.Errorf("plugin %q: StateChange for event %v, which is not a state change", svc.stub.Name(), ev)
	}
	return &api.Empty{}, err
}

func (svc *service) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	h, ok := svc.stub.handler.(ValidateContainerAdjustmentHandler)
	if !ok {
		return &api.ValidateContainerAdjustmentResponse{}, nil
	}
	if err := h.ValidateContainerAdjustment(ctx, req); err != nil {
		return &api.ValidateContainerAdjustmentResponse{Reject: true, Reason: err.Error()}, nil
	}
	return &api.ValidateContainerAdjustmentResponse{}, nil
}
