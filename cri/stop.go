package cri

import (
	"context"
	"errors"
	"fmt"
	"time"

	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

// StopPodSandbox stops a sandbox: NRI StopPodSandbox, sent once per
// sandbox while its network namespace still exists, then the namespace is
// deleted. The sandbox is NOTREADY and has no address. Stopping a stopped
// or unknown sandbox succeeds. A plugin's error is logged, not returned,
// as containerd does: the kubelet cannot do anything about it.
func (s *Server) StopPodSandbox(ctx context.Context, req *criapi.StopPodSandboxRequest) (*criapi.StopPodSandboxResponse, error) {
	id, err := s.store.resolve(req.GetPodSandboxId())
	if errors.Is(err, ErrNotFound) {
		return &criapi.StopPodSandboxResponse{}, nil
	}
	if err != nil {
		return nil, toStatus(fmt.Errorf("StopPodSandbox: %w", err))
	}
	unlock := s.locks.Lock(id)
	defer unlock()
	if err := s.stopLocked(ctx, id); err != nil {
		return nil, toStatus(err)
	}
	return &criapi.StopPodSandboxResponse{}, nil
}

// stopLocked stops the sandbox; the caller holds its lock.
func (s *Server) stopLocked(ctx context.Context, id string) error {
	sb, rec, err := s.store.get(id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("StopPodSandbox %s: %w", id, err)
	}
	if !sb.NRIStopped {
		// NOTREADY first, with no addresses: once a plugin has released
		// them, nothing may report them any more, even after a crash
		// (a restart then lets the plugins release through Synchronize,
		// which no longer lists the pod).
		if sb.ready() {
			err := s.store.update(id, func(sb *sandbox, _ *api.PodNetworkRecord) (*api.PodNetworkRecord, error) {
				sb.State = stateNotReady
				if sb.HostNetwork {
					return nil, nil
				}
				return &api.PodNetworkRecord{}, nil
			})
			if err != nil {
				return fmt.Errorf("StopPodSandbox %s: %w", id, err)
			}
		}
		// The plugins get the stop even if the caller gives up.
		cctx, cancel := s.cleanupContext(ctx)
		start := time.Now()
		err := s.rt.StopPodSandbox(cctx, &api.StopPodSandboxRequest{Pod: sb.nriPod(rec.GetNetwork().GetIps())})
		cancel()
		s.metrics.observeHook(eventStop, start, err)
		if errors.Is(err, runtime.ErrClosed) {
			return fmt.Errorf("StopPodSandbox %s: NRI: %w", id, err)
		}
		if err != nil {
			s.log.Warn("NRI StopPodSandbox failed; the sandbox is stopped anyway", "sandbox", id, "error", err)
		}
	}
	if sb.ready() || !sb.NRIStopped {
		err := s.store.update(id, func(sb *sandbox, _ *api.PodNetworkRecord) (*api.PodNetworkRecord, error) {
			sb.State, sb.NRIStopped = stateNotReady, true
			if sb.HostNetwork {
				return nil, nil
			}
			return &api.PodNetworkRecord{}, nil // the addresses were released
		})
		if err != nil {
			return fmt.Errorf("StopPodSandbox %s: %w", id, err)
		}
		s.log.Info("sandbox stopped", "sandbox", id, "pod", sb.Namespace+"/"+sb.Name)
	}
	if sb.NetNSName != "" {
		if err := deleteNetNS(sb.NetNSName); err != nil {
			return fmt.Errorf("StopPodSandbox %s: %w", id, err)
		}
	}
	return nil
}

// RemovePodSandbox stops the sandbox if needed, sends NRI
// RemovePodSandbox and forgets the sandbox, freeing its name. Removing an
// unknown sandbox succeeds.
func (s *Server) RemovePodSandbox(ctx context.Context, req *criapi.RemovePodSandboxRequest) (*criapi.RemovePodSandboxResponse, error) {
	id, err := s.store.resolve(req.GetPodSandboxId())
	if errors.Is(err, ErrNotFound) {
		return &criapi.RemovePodSandboxResponse{}, nil
	}
	if err != nil {
		return nil, toStatus(fmt.Errorf("RemovePodSandbox: %w", err))
	}
	unlock := s.locks.Lock(id)
	defer unlock()
	if err := s.removeLocked(ctx, id); err != nil {
		return nil, toStatus(err)
	}
	return &criapi.RemovePodSandboxResponse{}, nil
}

func (s *Server) removeLocked(ctx context.Context, id string) error {
	if err := s.stopLocked(ctx, id); err != nil {
		return err
	}
	sb, _, err := s.store.get(id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("RemovePodSandbox %s: %w", id, err)
	}
	cctx, cancel := s.cleanupContext(ctx)
	start := time.Now()
	err = s.rt.RemovePodSandbox(cctx, &api.RemovePodSandboxRequest{Pod: sb.nriPod(nil)})
	cancel()
	s.metrics.observeHook(eventRemove, start, err)
	if errors.Is(err, runtime.ErrClosed) {
		return fmt.Errorf("RemovePodSandbox %s: NRI: %w", id, err)
	}
	if err != nil {
		s.log.Warn("NRI RemovePodSandbox failed; the sandbox is removed anyway", "sandbox", id, "error", err)
	}
	if err := s.store.delete(id); err != nil {
		return fmt.Errorf("RemovePodSandbox %s: %w", id, err)
	}
	s.names.release(sb.reservedName(), id)
	s.log.Info("sandbox removed", "sandbox", id, "pod", sb.Namespace+"/"+sb.Name)
	return nil
}
