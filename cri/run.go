package cri

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"time"

	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/api"
)

// RunPodSandbox creates a sandbox: it reserves the name, creates the
// network namespace (none for host network), runs the NRI RunPodSandbox
// hook, persists the sandbox with the network the plugins returned, and
// only then makes it visible. On any failure everything is undone and the
// error carries no ID; a retry with the same configuration can succeed.
//
// A pod whose NRI encoding (as the hook would send it to the plugins) is
// larger than api.MaxObjectSize is refused with InvalidArgument naming
// its size and the limit, before anything is created or reserved and
// before any plugin is called: plugins could not be sent it again in
// Synchronize.
func (s *Server) RunPodSandbox(ctx context.Context, req *criapi.RunPodSandboxRequest) (*criapi.RunPodSandboxResponse, error) {
	id, err := s.runPodSandbox(ctx, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &criapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

func (s *Server) runPodSandbox(ctx context.Context, req *criapi.RunPodSandboxRequest) (string, error) {
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if err := validateMetadata(md); err != nil {
		return "", fmt.Errorf("RunPodSandbox: %w", err)
	}
	pod := md.GetNamespace() + "/" + md.GetName()
	if h := req.GetRuntimeHandler(); h != "" {
		return "", fmt.Errorf("RunPodSandbox of pod %s: %w: unknown runtime handler %q (nrinetd has only the default handler)", pod, ErrInvalid, h)
	}
	id, err := newID()
	if err != nil {
		return "", err
	}
	opts := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	sb := &sandbox{
		ID:          id,
		Name:        md.GetName(),
		Namespace:   md.GetNamespace(),
		UID:         md.GetUid(),
		Attempt:     md.GetAttempt(),
		Labels:      maps.Clone(cfg.GetLabels()),
		Annotations: maps.Clone(cfg.GetAnnotations()),
		Namespaces: namespaceModes{
			Network: opts.GetNetwork(), Pid: opts.GetPid(), Ipc: opts.GetIpc(), TargetID: opts.GetTargetId(),
		},
		State:        stateReady,
		CreatedAt:    time.Now().UnixNano(),
		HostNetwork:  opts.GetNetwork() == criapi.NamespaceMode_NODE,
		CgroupParent: cfg.GetLinux().GetCgroupParent(),
		PortMappings: toPortMappings(cfg.GetPortMappings()),
		DNS:          toDNSConfig(cfg.GetDnsConfig()),
	}
	if !sb.HostNetwork {
		sb.NetNSName = netnsName(id)
		sb.NetNSPath = netnsPath(sb.NetNSName)
	}
	if err := api.CheckPodSize(sb.nriPod(nil)); err != nil {
		return "", fmt.Errorf("RunPodSandbox of pod %s: %w", pod, err)
	}
	name := sb.reservedName()
	if err := s.names.reserve(name, id); err != nil {
		return "", fmt.Errorf("RunPodSandbox of pod %s: %w", pod, err)
	}
	done := false
	defer func() {
		if !done {
			s.names.release(name, id)
		}
	}()

	if !sb.HostNetwork {
		// Fail before creating anything when the network cannot be set up.
		if ready, why := s.rt.NetworkReady(); !ready {
			return "", fmt.Errorf("RunPodSandbox of pod %s: %w: %s", pod, ErrNetworkNotReady, why)
		}
		defer s.markCreating(sb.NetNSName)() // runs after commit or undo
		if _, err := createNetNS(sb.NetNSName); err != nil {
			return "", fmt.Errorf("RunPodSandbox of pod %s: %w", pod, err)
		}
		defer func() {
			if !done {
				if err := deleteNetNS(sb.NetNSName); err != nil {
					s.log.Warn("deleting the network namespace of a sandbox that failed", "sandbox", id, "error", err)
				}
			}
		}()
	}

	// From here until the sandbox is committed (or given up), plugins that
	// join see it in Synchronize, so none can miss it.
	s.store.setInflight(sb.nriPod(nil))
	defer s.store.dropInflight(id)
	start := time.Now()
	rec, err := s.rt.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: sb.nriPod(nil)})
	s.metrics.observeHook(eventRun, start, err)
	if err == nil {
		s.store.setInflight(sb.nriPod(rec.GetNetwork().GetIps()))
	}
	if err != nil {
		// The runtime library already told the plugins that had
		// succeeded to stop and remove the pod.
		return "", fmt.Errorf("RunPodSandbox of pod %s: NRI: %w", pod, err)
	}
	switch {
	case sb.HostNetwork:
		rec = nil
	case rec == nil:
		rec = &api.PodNetworkRecord{}
	}
	if err := s.store.create(sb, rec); err != nil {
		s.undoHook(ctx, sb, rec)
		return "", fmt.Errorf("RunPodSandbox of pod %s: %w", pod, err)
	}
	done = true
	s.log.Info("sandbox ready", "sandbox", id, "pod", pod, "netns", sb.NetNSPath,
		"ips", rec.GetNetwork().GetIps(), "hook", time.Since(start))
	return id, nil
}

// undoHook tells the plugins to stop and remove a pod that could not be
// persisted after its hook succeeded.
func (s *Server) undoHook(ctx context.Context, sb *sandbox, rec *api.PodNetworkRecord) {
	ctx, cancel := s.cleanupContext(ctx)
	defer cancel()
	pod := sb.nriPod(rec.GetNetwork().GetIps())
	if err := s.rt.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}); err != nil {
		s.log.Warn("NRI StopPodSandbox while undoing a sandbox", "sandbox", sb.ID, "error", err)
	}
	if err := s.rt.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}); err != nil {
		s.log.Warn("NRI RemovePodSandbox while undoing a sandbox", "sandbox", sb.ID, "error", err)
	}
}

// validateMetadata checks what identifies a sandbox.
func validateMetadata(md *criapi.PodSandboxMetadata) error {
	switch {
	case md == nil:
		return fmt.Errorf("%w: config.metadata is missing", ErrInvalid)
	case md.GetName() == "":
		return fmt.Errorf("%w: config.metadata.name is empty", ErrInvalid)
	case md.GetNamespace() == "":
		return fmt.Errorf("%w: config.metadata.namespace of pod %q is empty", ErrInvalid, md.GetName())
	case md.GetUid() == "":
		return fmt.Errorf("%w: config.metadata.uid of pod %s/%s is empty", ErrInvalid, md.GetNamespace(), md.GetName())
	}
	return nil
}

// newID returns a random sandbox ID of 64 hex digits.
func newID() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cri: generating a sandbox ID: %w", err)
	}
	return hex.EncodeToString(b), nil
}
