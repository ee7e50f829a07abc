package policies

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodChangeMatters(t *testing.T) {
	c := &Controller{node: "here"}
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", Labels: map[string]string{"app": "a"}, ResourceVersion: "1"},
			Spec: corev1.PodSpec{NodeName: "there", Containers: []corev1.Container{{Name: "c",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "198.18.0.5"}}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(old, new *corev1.Pod)
		want   bool
	}{
		{"nothing but the resourceVersion", func(_, n *corev1.Pod) { n.ResourceVersion = "2" }, false},
		{"Pending to Running", func(o, _ *corev1.Pod) { o.Status.Phase = corev1.PodPending }, false},
		{"a label", func(_, n *corev1.Pod) { n.Labels = map[string]string{"app": "b"} }, true},
		{"a label added", func(_, n *corev1.Pod) { n.Labels = map[string]string{"app": "a", "tier": "x"} }, true},
		{"its addresses", func(o, _ *corev1.Pod) { o.Status.PodIPs = nil }, true},
		{"another address", func(_, n *corev1.Pod) { n.Status.PodIPs = []corev1.PodIP{{IP: "198.18.0.6"}} }, true},
		{"it ended", func(_, n *corev1.Pod) { n.Status.Phase = corev1.PodSucceeded }, true},
		{"a named port", func(_, n *corev1.Pod) { n.Spec.Containers[0].Ports[0].ContainerPort = 81 }, true},
		{"an unnamed port", func(_, n *corev1.Pod) {
			n.Spec.Containers[0].Ports = append(n.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 9})
		}, false},
		{"host network", func(_, n *corev1.Pod) { n.Spec.HostNetwork = true }, true},
		{"without addresses, labels changed, another node", func(o, n *corev1.Pod) {
			o.Status.PodIPs, n.Status.PodIPs = nil, nil
			n.Labels = map[string]string{"app": "b"}
		}, false},
		{"without addresses, labels changed, this node", func(o, n *corev1.Pod) {
			o.Status.PodIPs, n.Status.PodIPs = nil, nil
			o.Spec.NodeName, n.Spec.NodeName = "here", "here"
			n.Labels = map[string]string{"app": "b"}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, n := base(), base()
			tc.change(o, n)
			if got := c.podChangeMatters(o, n); got != tc.want {
				t.Errorf("podChangeMatters = %v, want %v", got, tc.want)
			}
		})
	}
}
