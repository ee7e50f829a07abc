package stub

import (
	"context"

	nrinet "github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"

	"github.com/containerd/nri/pkg/api"
)

// adapter is the handler nrinet's plugin stub serves. It implements every
// event handler interface of package plugin except the pod network
// extension's, and relays each call to the upstream-style interface of
// the user's plugin. Its Configure answers with the subscription
// upstream's stub would make, so the runtime only sends the events the
// plugin handles; a call for an event the plugin has no interface for
// (which a runtime sends only outside the protocol) is answered empty.
type adapter struct{ s *stub }

// The variants that also return evictions are used for CreateContainer
// and UpdateContainer: plugin.New refuses a handler with both variants,
// and upstream's interfaces return none.
var _ interface {
	plugin.ConfigureHandler
	plugin.SynchronizeHandler
	plugin.ShutdownHandler
	plugin.RunPodSandboxHandler
	plugin.UpdatePodSandboxHandler
	plugin.PostUpdatePodSandboxHandler
	plugin.StopPodSandboxHandler
	plugin.RemovePodSandboxHandler
	plugin.CreateContainerEvictHandler
	plugin.PostCreateContainerHandler
	plugin.StartContainerHandler
	plugin.PostStartContainerHandler
	plugin.UpdateContainerEvictHandler
	plugin.PostUpdateContainerHandler
	plugin.StopContainerHandler
	plugin.RemoveContainerHandler
	plugin.ValidateContainerAdjustmentHandler
} = adapter{}

// Configure records what the runtime said (the timeouts and its NRI
// version, inferred from its name and version when it reports none), then
// asks the plugin's Configure, if any, for the subscription.
func (a adapter) Configure(ctx context.Context, config, runtimeName, runtimeVersion string) (nrinet.EventMask, error) {
	s := a.s
	if info, ok := plugin.RuntimeInfoFromContext(ctx); ok {
		nriVersion := info.NRIVersion
		switch nriVersion {
		case "", api.DevelVersion, api.UnknownVersion:
			if v, err := api.InferVersionFromRuntime(runtimeName, runtimeVersion); err != nil {
				s.logger.Warnf(ctx, "plugin %s: runtime %s %s reports NRI version %q: %v", s.name(), runtimeName, runtimeVersion, nriVersion, err)
			} else {
				s.logger.Infof(ctx, "plugin %s: runtime %s %s reports NRI version %q, inferred %s", s.name(), runtimeName, runtimeVersion, nriVersion, v)
				nriVersion = v
			}
		}
		s.mu.Lock()
		s.registrationTimeout = info.RegistrationTimeout
		s.requestTimeout = info.RequestTimeout
		s.runtimeNRIVersion = nriVersion
		s.mu.Unlock()
		s.logger.Infof(ctx, "Configuring plugin %s for runtime %s/%s (NRI version %s)...", s.name(), runtimeName, runtimeVersion, nriVersion)
	}
	var requested api.EventMask
	if p, ok := s.plugin.(ConfigureInterface); ok {
		m, err := p.Configure(ctx, config, runtimeName, runtimeVersion)
		if err != nil {
			s.logger.Errorf(ctx, "plugin %s: configuration failed: %v", s.name(), err)
			return 0, err
		}
		requested = m
	}
	events, err := subscription(s.handled, requested)
	if err != nil {
		s.logger.Errorf(ctx, "plugin %s: %v", s.name(), err)
		return 0, err
	}
	s.logger.Infof(ctx, "Subscribing plugin %s for events %s", s.name(), events.PrettyString())
	return nrinet.EventMask(events), nil
}

func (a adapter) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	if p, ok := a.s.plugin.(SynchronizeInterface); ok {
		return p.Synchronize(ctx, pods, ctrs)
	}
	return nil, nil
}

func (a adapter) Shutdown(ctx context.Context) {
	if p, ok := a.s.plugin.(ShutdownInterface); ok {
		p.Shutdown(ctx)
	}
}

func (a adapter) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	if p, ok := a.s.plugin.(RunPodInterface); ok {
		return p.RunPodSandbox(ctx, pod)
	}
	return nil
}

func (a adapter) UpdatePodSandbox(ctx context.Context, pod *api.PodSandbox, overhead, resources *api.LinuxResources) error {
	if p, ok := a.s.plugin.(UpdatePodInterface); ok {
		return p.UpdatePodSandbox(ctx, pod, overhead, resources)
	}
	return nil
}

func (a adapter) PostUpdatePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	if p, ok := a.s.plugin.(PostUpdatePodInterface); ok {
		return p.PostUpdatePodSandbox(ctx, pod)
	}
	return nil
}

func (a adapter) StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	if p, ok := a.s.plugin.(StopPodInterface); ok {
		return p.StopPodSandbox(ctx, pod)
	}
	return nil
}

func (a adapter) RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	if p, ok := a.s.plugin.(RemovePodInterface); ok {
		return p.RemovePodSandbox(ctx, pod)
	}
	return nil
}

func (a adapter) CreateContainerEvict(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
	if p, ok := a.s.plugin.(CreateContainerInterface); ok {
		adjust, update, err := p.CreateContainer(ctx, pod, ctr)
		return adjust, update, nil, err
	}
	return nil, nil, nil, nil
}

func (a adapter) PostCreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	if p, ok := a.s.plugin.(PostCreateContainerInterface); ok {
		return p.PostCreateContainer(ctx, pod, ctr)
	}
	return nil
}

func (a adapter) StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	if p, ok := a.s.plugin.(StartContainerInterface); ok {
		return p.StartContainer(ctx, pod, ctr)
	}
	return nil
}

func (a adapter) PostStartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	if p, ok := a.s.plugin.(PostStartContainerInterface); ok {
		return p.PostStartContainer(ctx, pod, ctr)
	}
	return nil
}

func (a adapter) UpdateContainerEvict(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
	if p, ok := a.s.plugin.(UpdateContainerInterface); ok {
		update, err := p.UpdateContainer(ctx, pod, ctr, resources)
		return update, nil, err
	}
	return nil, nil, nil
}

func (a adapter) PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	if p, ok := a.s.plugin.(PostUpdateContainerInterface); ok {
		return p.PostUpdateContainer(ctx, pod, ctr)
	}
	return nil
}

func (a adapter) StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	if p, ok := a.s.plugin.(StopContainerInterface); ok {
		return p.StopContainer(ctx, pod, ctr)
	}
	return nil, nil
}

func (a adapter) RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	if p, ok := a.s.plugin.(RemoveContainerInterface); ok {
		return p.RemoveContainer(ctx, pod, ctr)
	}
	return nil
}

func (a adapter) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if p, ok := a.s.plugin.(ValidateContainerAdjustmentInterface); ok {
		return p.ValidateContainerAdjustment(ctx, req)
	}
	return nil
}
