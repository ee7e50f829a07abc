package adaptation

import "context"

// The lifecycle requests: each is relayed to the plugins subscribed to its
// event, in index order, and merged, as nrinet's runtime does.

// RunPodSandbox relays the creation of a pod whose network the runtime
// sets up itself, as upstream's runtimes do. With pod networks enabled
// (EnablePodNetworks; RunPodSandboxNetwork is for the pods the plugins
// network) the request says so (runtime_owns_network): the network plugins
// keep out of the pod's network, which a runtime that runs pods of both
// kinds at once (containerd switched between its network modes) needs.
// req is not modified.
func (r *Adaptation) RunPodSandbox(ctx context.Context, req *RunPodSandboxRequest) error {
	rt, err := r.runtime("RunPodSandbox")
	if err != nil {
		return err
	}
	r.mu.Lock()
	podNetworks := r.podNetworks
	r.mu.Unlock()
	if podNetworks && !req.GetRuntimeOwnsNetwork() {
		req = &RunPodSandboxRequest{Pod: req.GetPod(), RuntimeOwnsNetwork: true}
	}
	_, err = rt.RunPodSandbox(ctx, req)
	return err
}

// UpdatePodSandbox relays a change of a pod's resources.
func (r *Adaptation) UpdatePodSandbox(ctx context.Context, req *UpdatePodSandboxRequest) (*UpdatePodSandboxResponse, error) {
	rt, err := r.runtime("UpdatePodSandbox")
	if err != nil {
		return nil, err
	}
	return rt.UpdatePodSandbox(ctx, req)
}

// PostUpdatePodSandbox relays that a pod's resources were changed.
func (r *Adaptation) PostUpdatePodSandbox(ctx context.Context, req *PostUpdatePodSandboxRequest) error {
	rt, err := r.runtime("PostUpdatePodSandbox")
	if err != nil {
		return err
	}
	return rt.PostUpdatePodSandbox(ctx, req)
}

// StopPodSandbox relays the stop of a pod.
func (r *Adaptation) StopPodSandbox(ctx context.Context, req *StopPodSandboxRequest) error {
	rt, err := r.runtime("StopPodSandbox")
	if err != nil {
		return err
	}
	return rt.StopPodSandbox(ctx, req)
}

// RemovePodSandbox relays the removal of a pod.
func (r *Adaptation) RemovePodSandbox(ctx context.Context, req *RemovePodSandboxRequest) error {
	rt, err := r.runtime("RemovePodSandbox")
	if err != nil {
		return err
	}
	return rt.RemovePodSandbox(ctx, req)
}

// CreateContainer relays the creation of a container and returns the
// merged adjustment, updates of other containers and evictions.
func (r *Adaptation) CreateContainer(ctx context.Context, req *CreateContainerRequest) (*CreateContainerResponse, error) {
	rt, err := r.runtime("CreateContainer")
	if err != nil {
		return nil, err
	}
	return rt.CreateContainer(ctx, req)
}

// PostCreateContainer relays that a container was created.
func (r *Adaptation) PostCreateContainer(ctx context.Context, req *PostCreateContainerRequest) error {
	rt, err := r.runtime("PostCreateContainer")
	if err != nil {
		return err
	}
	return rt.PostCreateContainer(ctx, req)
}

// StartContainer relays that a container is about to start.
func (r *Adaptation) StartContainer(ctx context.Context, req *StartContainerRequest) error {
	rt, err := r.runtime("StartContainer")
	if err != nil {
		return err
	}
	return rt.StartContainer(ctx, req)
}

// PostStartContainer relays that a container started.
func (r *Adaptation) PostStartContainer(ctx context.Context, req *PostStartContainerRequest) error {
	rt, err := r.runtime("PostStartContainer")
	if err != nil {
		return err
	}
	return rt.PostStartContainer(ctx, req)
}

// UpdateContainer relays a requested update of a container's resources
// and returns the merged updates and evictions.
func (r *Adaptation) UpdateContainer(ctx context.Context, req *UpdateContainerRequest) (*UpdateContainerResponse, error) {
	rt, err := r.runtime("UpdateContainer")
	if err != nil {
		return nil, err
	}
	return rt.UpdateContainer(ctx, req)
}

// PostUpdateContainer relays that a container was updated.
func (r *Adaptation) PostUpdateContainer(ctx context.Context, req *PostUpdateContainerRequest) error {
	rt, err := r.runtime("PostUpdateContainer")
	if err != nil {
		return err
	}
	return rt.PostUpdateContainer(ctx, req)
}

// StopContainer relays the stop of a container and returns the merged
// updates of other containers.
func (r *Adaptation) StopContainer(ctx context.Context, req *StopContainerRequest) (*StopContainerResponse, error) {
	rt, err := r.runtime("StopContainer")
	if err != nil {
		return nil, err
	}
	return rt.StopContainer(ctx, req)
}

// RemoveContainer relays the removal of a container.
func (r *Adaptation) RemoveContainer(ctx context.Context, req *RemoveContainerRequest) error {
	rt, err := r.runtime("RemoveContainer")
	if err != nil {
		return err
	}
	return rt.RemoveContainer(ctx, req)
}
