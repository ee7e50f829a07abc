package api_test

import (
	"fmt"
	"testing"

	"github.com/nrinet/nrinet/api"
)

func TestPodSandboxNetNSPath(t *testing.T) {
	tests := []struct {
		name string
		pod  *api.PodSandbox
		want string
	}{
		{"nil pod", nil, ""},
		{"no linux", &api.PodSandbox{}, ""},
		{"no namespaces", &api.PodSandbox{Linux: &api.LinuxPodSandbox{}}, ""},
		{
			name: "no network namespace",
			pod: &api.PodSandbox{Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{
				{Type: "ipc", Path: "/proc/1/ns/ipc"},
				{Type: "uts"},
			}}},
			want: "",
		},
		{
			name: "network namespace",
			pod: &api.PodSandbox{Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{
				{Type: "ipc"},
				nil,
				{Type: "network", Path: "/var/run/netns/cni-1234"},
				{Type: "network", Path: "/second"},
			}}},
			want: "/var/run/netns/cni-1234",
		},
		{
			name: "host network has no path",
			pod: &api.PodSandbox{Linux: &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{
				{Type: "network"},
			}}},
			want: "",
		},
	}
	for _, tt := range tests {
		if got := tt.pod.NetNSPath(); got != tt.want {
			t.Errorf("%s: NetNSPath() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func ExamplePodSandbox_NetNSPath() {
	pod := &api.PodSandbox{
		Id: "pod-1",
		Linux: &api.LinuxPodSandbox{
			Namespaces: []*api.LinuxNamespace{
				{Type: "ipc", Path: "/var/run/ipcns/pod-1"},
				{Type: api.NetworkNamespace, Path: "/var/run/netns/cni-pod-1"},
			},
		},
	}
	fmt.Println(pod.NetNSPath())
	// Output:
	// /var/run/netns/cni-pod-1
}
