package plugin

import (
	"github.com/containerd/nri/pkg/api"
	nrinet "github.com/nrinet/nrinet/api"
)

const (
	// AnnotationDomain is the domain of NRI-specific annotations.
	AnnotationDomain = nrinet.AnnotationDomain

	// RequiredPluginsAnnotation is the pod annotation listing the plugins
	// that must be present when a pod's containers are created; the
	// default validator rejects a container for which one is missing.
	RequiredPluginsAnnotation = nrinet.RequiredPluginsAnnotation
)

// GetEffectiveAnnotation returns the value of the pod annotation key as it
// applies to the named container: the container-scoped
// "<key>/container.<container>" if present, else the pod-scoped
// "<key>/pod", else "<key>". ok is false if none is set.
//
// Unlike upstream, an empty container name consults only the pod-scoped
// keys (upstream also looks up "<key>/container.", a key no container can
// be named by).
func GetEffectiveAnnotation(pod *api.PodSandbox, key, container string) (value string, ok bool) {
	_, value, ok = nrinet.EffectiveAnnotation(pod.GetAnnotations(), key, container)
	return value, ok
}
