package policies

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// slim is the informers' transform: it keeps of a Pod and a Namespace
// only what the policies need (names, UID, labels; a pod's host-network
// flag, node, named container ports, phase and addresses), so that a
// cluster's pods cost the cache little. Other objects pass unchanged.
func slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID, Labels: o.Labels, ResourceVersion: o.ResourceVersion},
			Spec:       corev1.PodSpec{HostNetwork: o.Spec.HostNetwork, NodeName: o.Spec.NodeName},
			Status:     corev1.PodStatus{Phase: o.Status.Phase, PodIPs: o.Status.PodIPs},
		}
		for _, c := range o.Spec.Containers {
			var ports []corev1.ContainerPort
			for _, port := range c.Ports {
				if port.Name != "" {
					ports = append(ports, corev1.ContainerPort{Name: port.Name, Protocol: port.Protocol, ContainerPort: port.ContainerPort})
				}
			}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c.Name, Ports: ports})
		}
		return p, nil
	case *corev1.Namespace:
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Name, UID: o.UID, Labels: o.Labels, ResourceVersion: o.ResourceVersion}}, nil
	}
	return obj, nil
}
