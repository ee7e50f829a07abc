package api_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/containerd/nri/pkg/api"
)

func TestFileDescriptor(t *testing.T) {
	fd := api.File_pkg_api_api_proto
	if fd == nil || fd.Package() != "nri.pkg.api.v1alpha1" || fd.Path() != "pkg/api/api.proto" {
		t.Fatalf("File_pkg_api_api_proto = %v, want the nri.pkg.api.v1alpha1 schema of pkg/api/api.proto", fd)
	}
	if found, err := protoregistry.GlobalFiles.FindFileByPath("pkg/api/api.proto"); err != nil || found != fd {
		t.Errorf("the registry's pkg/api/api.proto = %v, %v; want the schema", found, err)
	}
	for _, name := range []string{"PodSandbox", "ContainerAdjustment", "Empty"} {
		if fd.Messages().ByName(protoreflect.Name(name)) == nil {
			t.Errorf("the schema has no message %s", name)
		}
	}
	if fd.Services().ByName("Plugin") == nil || fd.Services().ByName("Runtime") == nil {
		t.Errorf("the schema lacks the Plugin or Runtime service")
	}
}

func TestDecodeErrors(t *testing.T) {
	// A varint longer than 64 bits, as the first field key.
	overflow := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	var pod api.PodSandbox
	if err := pod.UnmarshalVT(overflow); !errors.Is(err, api.ErrIntOverflow) {
		t.Errorf("UnmarshalVT(overflow) = %v, want ErrIntOverflow", err)
	}
}
