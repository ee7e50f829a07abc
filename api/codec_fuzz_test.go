package api_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
)

// syncSeeds are encodings of Synchronize messages, valid and not, to start
// FuzzSyncDecode from.
func syncSeeds(f *testing.F) [][]byte {
	f.Helper()
	ctr := &api.Container{
		Id: "c1", PodSandboxId: "p1", Name: "app", State: api.ContainerState_CONTAINER_RUNNING,
		Labels: map[string]string{"app": "web"}, Env: []string{"A=1"}, Args: []string{"/bin/app", "-v"},
		Mounts: []*api.Mount{{Destination: "/data", Type: "bind", Source: "/srv", Options: []string{"rbind", "ro"}}},
		Linux: &api.LinuxContainer{Resources: &api.LinuxResources{
			Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1 << 30}},
			Cpu:    &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 512}, Cpus: "0-3"},
		}},
		Pid: 4242, CreatedAt: 1700000000, ExitCode: -1,
	}
	msgs := []proto.Message{
		&api.SynchronizeRequest{},
		&api.SynchronizeRequest{Pods: []*api.PodSandbox{samplePod()}, Containers: []*api.Container{ctr}, More: true},
		&api.SynchronizeResponse{More: true},
		&api.SynchronizeResponse{Update: []*api.ContainerUpdate{{
			ContainerId: "c1", IgnoreFailure: true,
			Linux: &api.LinuxContainerUpdate{Resources: ctr.GetLinux().GetResources()},
		}}},
	}
	var out [][]byte
	for _, m := range msgs {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out,
		[]byte{0x18, 0x01, 0x9a, 0x06, 0x01, 'x'},  // more, then unknown field 99
		[]byte{0x0a, 0x04, 0x2a, 0x02, 0x0a, 0x00}, // pods[0].labels entry with an empty key
		[]byte{0x0a, 0x80, 0x80, 0x80, 0x80, 0x10}, // length overflows
	)
}

// FuzzSyncDecode decodes arbitrary bytes as a SynchronizeRequest and as a
// SynchronizeResponse, through the fast codec the wire uses (api.Fast, and
// api.FastShared as the plugin library decodes Synchronize) and through
// protobuf-go's own decoder: both must fail, or both must succeed with
// equal messages.
func FuzzSyncDecode(f *testing.F) {
	for _, b := range syncSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecoders(t, b, func() api.VTMessage { return &api.SynchronizeRequest{} })
		checkDecoders(t, b, func() api.VTMessage { return &api.SynchronizeResponse{} })
	})
}

func checkDecoders(t *testing.T, b []byte, newMsg func() api.VTMessage) {
	t.Helper()
	ref := newMsg()
	refErr := proto.Unmarshal(b, ref)
	for _, tc := range []struct {
		name string
		wrap func(api.VTMessage) proto.Message
	}{
		{"Fast", api.Fast},
		{"FastShared", api.FastShared},
	} {
		got := newMsg()
		err := proto.Unmarshal(b, tc.wrap(got))
		what := fmt.Sprintf("%s %T", tc.name, got)
		switch {
		case (err == nil) != (refErr == nil):
			t.Fatalf("%s: error %v, protobuf-go: %v (input % x)", what, err, refErr, b)
		case err == nil && !proto.Equal(got, ref):
			t.Fatalf("%s: decoded\n%v\nprotobuf-go decoded\n%v\n(input % x)", what, got, ref, b)
		}
	}
}

// TestFast_AcceptsWhatProtobufGoAccepts checks the fast codec against
// protobuf-go on the kinds of input where vtprotobuf's decoders, left to
// themselves, differ from it (found by FuzzSyncDecode).
func TestFast_AcceptsWhatProtobufGoAccepts(t *testing.T) {
	field := func(num protowire.Number, payload []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), payload)
	}
	overflow := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02} // 10th byte over 1
	pod := func(b []byte) []byte { return field(1, b) }                            // SynchronizeRequest.pods
	ctr := func(b []byte) []byte { return field(2, b) }                            // SynchronizeRequest.containers
	for _, tc := range []struct {
		name   string
		in     []byte
		wantOK bool // what protobuf-go says
	}{
		{"known field with another wire type", protowire.AppendVarint([]byte{0x08}, 48), true},
		{"nested known field with another wire type", pod(protowire.AppendVarint([]byte{0x08}, 1)), true},
		{"string not UTF-8", pod(field(1, []byte{'p', 0xff})), false},
		{"map key not UTF-8", pod(field(5, append(field(1, []byte{0xc3}), field(2, []byte("v"))...))), false},
		{"repeated string not UTF-8", pod(field(10, []byte{0xed, 0xa0, 0x80})), false},
		{"unknown bytes field not UTF-8", pod(field(99, []byte{0xff})), true},
		{"varint overflow in a known field", pod(append([]byte{0x48}, overflow...)), false},
		{"varint overflow in an unknown field", pod(append([]byte{0x88, 0x30}, overflow...)), false},
		{"varint overflow in a packed field", ctr(field(21, field(3, overflow))), false},
		{"packed field", ctr(field(21, field(3, []byte{0x01, 0xe8, 0x07}))), true},
		{"field number above the maximum", append(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3), 0x01), false},
		{"unknown field with a tag longer than needed", pod([]byte{0x88, 0x88, 0x00, 0x01}), true},
		{"map value with another wire type", pod(field(6, []byte{0x11, 0x01, '0', 0, 0, 0, 0, 0, 0})), true},
		{"valid UTF-8", pod(field(1, []byte("pöd-1"))), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := proto.Unmarshal(tc.in, &api.SynchronizeRequest{}); (err == nil) != tc.wantOK {
				t.Fatalf("protobuf-go: %v; the test expects ok=%v", err, tc.wantOK)
			}
			checkDecoders(t, tc.in, func() api.VTMessage { return &api.SynchronizeRequest{} })
		})
	}
}
