package api_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

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

// fullPod has every field of PodSandbox set, the extension's too, and an
// unknown field.
func fullPod(n int) *api.PodSandbox {
	pod := &api.PodSandbox{
		Id: fmt.Sprint("id-", n), Name: "name", Uid: "uid", Namespace: "ns",
		Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "2"},
		RuntimeHandler: "runc", Pid: 42, Ips: []string{"198.18.0.5"},
		Linux:        &api.LinuxPodSandbox{CgroupParent: "/kubepods", Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/ns"}}},
		PortMappings: []*api.PortMapping{{Protocol: api.Protocol_PROTOCOL_SCTP, ContainerPort: 9, HostPort: 19, HostIp: "198.18.0.1"}},
		DnsConfig:    &api.PodDNSConfig{Servers: []string{"198.18.0.53"}},
	}
	pod.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 9999, protowire.VarintType), 7))
	return pod
}

func TestPodSandbox_WithoutExtensionFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *api.PodSandbox
	}{
		{"all fields", fullPod(1)},
		{"port mappings only", &api.PodSandbox{Id: "p", PortMappings: []*api.PortMapping{{ContainerPort: 80}}}},
		{"empty DNS configuration", &api.PodSandbox{Id: "p", DnsConfig: &api.PodDNSConfig{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := proto.CloneOf(tc.pod)
			if !tc.pod.HasExtensionFields() {
				t.Fatal("HasExtensionFields = false")
			}
			got := tc.pod.WithoutExtensionFields()
			want := proto.CloneOf(tc.pod)
			want.PortMappings, want.DnsConfig = nil, nil
			if got.HasExtensionFields() || !proto.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if !proto.Equal(tc.pod, orig) {
				t.Errorf("the pod was modified: %v", tc.pod)
			}
		})
	}
	plain := &api.PodSandbox{Id: "plain", Labels: map[string]string{"a": "b"}}
	if plain.HasExtensionFields() || plain.WithoutExtensionFields() != plain {
		t.Error("a pod without the extension's fields is not returned as it is")
	}
	var nilPod *api.PodSandbox
	if nilPod.HasExtensionFields() || nilPod.WithoutExtensionFields() != nil {
		t.Error("nil pod")
	}
}

func TestClassicView(t *testing.T) {
	plain := &api.PodSandbox{Id: "plain"}
	ctr := &api.Container{Id: "c", PodSandboxId: "id-1"}
	for _, tc := range []struct {
		name string
		in   api.VTMessage
		same bool // returned as it is
	}{
		{"request with a pod", &api.RunPodSandboxRequest{Pod: fullPod(1)}, false},
		{"pod whose network the runtime owns", &api.RunPodSandboxRequest{Pod: plain, RuntimeOwnsNetwork: true}, false},
		{"pod whose network the runtime owns, with the extension", &api.RunPodSandboxRequest{Pod: fullPod(1), RuntimeOwnsNetwork: true}, false},
		{"request with a pod and a container", &api.CreateContainerRequest{Pod: fullPod(1), Container: ctr}, false},
		{"StateChange", &api.StateChangeEvent{Event: api.Event_RUN_POD_SANDBOX, Pod: fullPod(1), Container: ctr}, false},
		{"Synchronize, some pods with the extension", &api.SynchronizeRequest{Pods: []*api.PodSandbox{plain, fullPod(1), fullPod(2)}, Containers: []*api.Container{ctr}, More: true}, false},
		{"Synchronize without the extension", &api.SynchronizeRequest{Pods: []*api.PodSandbox{plain}}, true},
		{"pod without the extension", &api.StopPodSandboxRequest{Pod: plain}, true},
		{"no pod", &api.ConfigureRequest{Config: "x"}, true},
		{"nil request", (*api.RunPodSandboxRequest)(nil), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := proto.Clone(tc.in)
			got := api.ClassicView(tc.in)
			if !proto.Equal(tc.in, orig) {
				t.Fatalf("the request was modified: %v", tc.in)
			}
			if tc.same {
				if got != tc.in {
					t.Errorf("got a copy, want the request itself")
				}
				return
			}
			// Expected: the request with each pod stripped by hand.
			want := proto.Clone(tc.in)
			strip := func(p *api.PodSandbox) { p.PortMappings, p.DnsConfig = nil, nil }
			switch w := want.(type) {
			case *api.RunPodSandboxRequest:
				strip(w.Pod)
				w.RuntimeOwnsNetwork = false
			case *api.CreateContainerRequest:
				strip(w.Pod)
			case *api.StateChangeEvent:
				strip(w.Pod)
			case *api.SynchronizeRequest:
				for _, p := range w.Pods {
					strip(p)
				}
			}
			if !proto.Equal(got, want) {
				t.Errorf("got %v\nwant %v", got, want)
			}
		})
	}
}
