package adjust

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse_RoundTrip(t *testing.T) {
	want := Spec{
		Socket: "/tmp/x/nri.sock", Name: "e2e-stub", Idx: "20", Container: "stub-target",
		EnvKey: "NRINET_E2E_STUB", EnvValue: "a=b",
		AnnotationKey: "nrinet.e2e/stub", AnnotationValue: "v",
		MountSource: "/tmp/x/m", MountDestination: "/nrinet-e2e",
		MemoryLimit: 64 << 20,
	}
	got, err := Parse("p", want.Args())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(Args()) = %+v, want %+v", got, want)
	}
}

func TestParse_Errors(t *testing.T) {
	valid := Spec{Socket: "s", Name: "n", Idx: "1", Container: "c", EnvKey: "K", EnvValue: "V",
		AnnotationKey: "a", AnnotationValue: "b", MountSource: "/src", MountDestination: "/dst", MemoryLimit: 1}
	set := func(flag, value string) []string {
		args := valid.Args()
		for i := range args {
			if args[i] == "-"+flag {
				args[i+1] = value
			}
		}
		return args
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing socket", set("socket", ""), "-socket is required"},
		{"env without =", set("env", "KEY"), "want KEY=VALUE"},
		{"annotation with empty key", set("annotation", "=v"), "want KEY=VALUE"},
		{"mount without destination", set("mount", "/src"), "want HOST-DIR:CONTAINER-DIR"},
		{"memory not a number", set("memory", "64M"), "positive number of bytes"},
		{"memory zero", set("memory", "0"), "positive number of bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p", tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
