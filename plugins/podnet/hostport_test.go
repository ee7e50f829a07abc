package podnet

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugins/podnet/hostport"
)

func TestPortMappings(t *testing.T) {
	pod := func(pms ...*api.PortMapping) *api.PodSandbox {
		return &api.PodSandbox{Id: "id", Namespace: "ns", Name: "web", PortMappings: pms}
	}
	got, err := portMappings(pod(
		&api.PortMapping{Protocol: api.Protocol_PROTOCOL_TCP, ContainerPort: 80, HostPort: 8080, HostIp: "127.0.0.1"},
		&api.PortMapping{Protocol: api.Protocol_PROTOCOL_UDP, ContainerPort: 53, HostPort: 53},
		&api.PortMapping{Protocol: api.Protocol_PROTOCOL_SCTP, ContainerPort: 9, HostPort: 9, HostIp: "fd00:198:18::1"},
		&api.PortMapping{Protocol: api.Protocol_PROTOCOL_TCP, ContainerPort: 443},
	))
	want := []hostport.Mapping{
		{Protocol: hostport.TCP, HostPort: 8080, ContainerPort: 80, HostIP: netip.MustParseAddr("127.0.0.1")},
		{Protocol: hostport.UDP, HostPort: 53, ContainerPort: 53},
		{Protocol: hostport.SCTP, HostPort: 9, ContainerPort: 9, HostIP: netip.MustParseAddr("fd00:198:18::1")},
		{Protocol: hostport.TCP, ContainerPort: 443},
	}
	if err != nil || len(got) != len(want) {
		t.Fatalf("portMappings = %v, %v; want %v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d = %v, want %v", i, got[i], want[i])
		}
	}
	for _, tc := range []struct {
		name string
		pm   *api.PortMapping
		want string
	}{
		{"host port out of range", &api.PortMapping{ContainerPort: 80, HostPort: 70000}, "host port 70000 is outside 0..65535"},
		{"negative container port", &api.PortMapping{ContainerPort: -1, HostPort: 80}, "container port -1 is outside 0..65535"},
		{"bad host IP", &api.PortMapping{ContainerPort: 80, HostPort: 80, HostIp: "node-1"}, `host IP "node-1"`},
		{"unknown protocol", &api.PortMapping{Protocol: 7, ContainerPort: 80, HostPort: 80}, "protocol 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := portMappings(pod(tc.pm))
			if !errors.Is(err, hostport.ErrInvalidMapping) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ns/web") {
				t.Errorf("error %v; want ErrInvalidMapping naming ns/web and %q", err, tc.want)
			}
		})
	}
}
