package validator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/validator"
)

func TestValidateContainerAdjustmentRules(t *testing.T) {
	allSeccomp := validator.Config{
		Enable:                                true,
		RejectRuntimeDefaultSeccompAdjustment: true,
		RejectUnconfinedSeccompAdjustment:     true,
		RejectCustomSeccompAdjustment:         true,
	}
	everything := validator.Config{
		Enable:                                true,
		RejectOCIHookAdjustment:               true,
		RejectRuntimeDefaultSeccompAdjustment: true,
		RejectUnconfinedSeccompAdjustment:     true,
		RejectCustomSeccompAdjustment:         true,
		RejectNamespaceAdjustment:             true,
		RejectSysctlAdjustment:                true,
		RequiredPlugins:                       []string{"policy"},
	}
	hooks := func(owner string) owned { return owned{simple: map[api.Field]string{api.Field_OciHooks: owner}} }
	seccomp := owned{simple: map[api.Field]string{api.Field_SeccompPolicy: "20-sec"}}
	namespaces := owned{compound: map[api.Field]map[string]string{
		api.Field_Namespace: {"network": "30-net", "ipc": "31-ipc"},
	}}
	sysctls := owned{compound: map[api.Field]map[string]string{
		api.Field_Sysctl: {"net.ipv4.ip_forward": "40-fwd", "kernel.shmmax": "41-shm"},
	}}
	profile := func(typ api.SecurityProfile_ProfileType, ref string) *api.SecurityProfile {
		return &api.SecurityProfile{ProfileType: typ, LocalhostRef: ref}
	}

	tests := []struct {
		name    string
		cfg     validator.Config
		owners  owned
		profile *api.SecurityProfile
		want    string
	}{
		{name: "disabled accepts everything", cfg: validator.Config{
			RejectOCIHookAdjustment: true, RejectNamespaceAdjustment: true, RequiredPlugins: []string{"policy"},
		}, owners: hooks("10-hook")},
		{name: "no adjustment", cfg: everything, owners: owned{}, want: `required plugin "policy" (from configuration) is not present`},

		// OCI hooks.
		{name: "hooks allowed", cfg: validator.Config{Enable: true}, owners: hooks("10-hook")},
		{name: "hooks rejected", cfg: validator.Config{Enable: true, RejectOCIHookAdjustment: true}, owners: hooks("10-hook"),
			want: `plugin "10-hook" injected OCI hooks, which is not allowed`},
		{name: "hooks by two plugins", cfg: validator.Config{Enable: true, RejectOCIHookAdjustment: true}, owners: hooks("10-a,20-b"),
			want: `plugins "10-a", "20-b" injected OCI hooks, which is not allowed`},
		{name: "hooks owner list with blanks", cfg: validator.Config{Enable: true, RejectOCIHookAdjustment: true}, owners: hooks(" 10-a,, 20-b "),
			want: `plugins "10-a", "20-b" injected OCI hooks, which is not allowed`},
		{name: "hooks owner unnamed", cfg: validator.Config{Enable: true, RejectOCIHookAdjustment: true}, owners: hooks(""),
			want: `an unnamed plugin injected OCI hooks, which is not allowed`},
		{name: "no hooks", cfg: validator.Config{Enable: true, RejectOCIHookAdjustment: true}, owners: seccomp},

		// Seccomp policy by profile type.
		{name: "seccomp no profile rejected as unconfined", cfg: validator.Config{Enable: true, RejectUnconfinedSeccompAdjustment: true}, owners: seccomp,
			want: `plugin "20-sec" set the seccomp policy of a container with an unconfined seccomp profile, which is not allowed`},
		{name: "seccomp no profile allowed", cfg: validator.Config{Enable: true, RejectRuntimeDefaultSeccompAdjustment: true, RejectCustomSeccompAdjustment: true}, owners: seccomp},
		{name: "seccomp unconfined rejected", cfg: allSeccomp, owners: seccomp, profile: profile(api.SecurityProfile_UNCONFINED, ""),
			want: `plugin "20-sec" set the seccomp policy of a container with an unconfined seccomp profile, which is not allowed`},
		{name: "seccomp unconfined allowed", cfg: validator.Config{Enable: true, RejectRuntimeDefaultSeccompAdjustment: true, RejectCustomSeccompAdjustment: true},
			owners: seccomp, profile: profile(api.SecurityProfile_UNCONFINED, "")},
		{name: "seccomp runtime default rejected", cfg: validator.Config{Enable: true, RejectRuntimeDefaultSeccompAdjustment: true}, owners: seccomp,
			profile: profile(api.SecurityProfile_RUNTIME_DEFAULT, ""),
			want:    `plugin "20-sec" set the seccomp policy of a container with the runtime default seccomp profile, which is not allowed`},
		{name: "seccomp runtime default allowed", cfg: validator.Config{Enable: true, RejectUnconfinedSeccompAdjustment: true, RejectCustomSeccompAdjustment: true},
			owners: seccomp, profile: profile(api.SecurityProfile_RUNTIME_DEFAULT, "")},
		{name: "seccomp custom rejected", cfg: validator.Config{Enable: true, RejectCustomSeccompAdjustment: true}, owners: seccomp,
			profile: profile(api.SecurityProfile_LOCALHOST, "profiles/audit.json"),
			want:    `plugin "20-sec" set the seccomp policy of a container with the custom seccomp profile "profiles/audit.json", which is not allowed`},
		{name: "seccomp custom allowed", cfg: validator.Config{Enable: true, RejectUnconfinedSeccompAdjustment: true, RejectRuntimeDefaultSeccompAdjustment: true},
			owners: seccomp, profile: profile(api.SecurityProfile_LOCALHOST, "profiles/audit.json")},
		{name: "seccomp unknown type rejected", cfg: validator.Config{Enable: true, RejectCustomSeccompAdjustment: true}, owners: seccomp,
			profile: profile(7, ""),
			want:    `plugin "20-sec" set the seccomp policy of a container with a seccomp profile of unknown type 7, which is not allowed`},
		{name: "seccomp unknown type allowed", cfg: validator.Config{Enable: true}, owners: seccomp, profile: profile(7, "")},
		{name: "seccomp not adjusted", cfg: allSeccomp, owners: hooks("10-hook"), profile: profile(api.SecurityProfile_UNCONFINED, "")},

		// Namespaces and sysctls.
		{name: "namespaces allowed", cfg: validator.Config{Enable: true}, owners: namespaces},
		{name: "namespaces rejected", cfg: validator.Config{Enable: true, RejectNamespaceAdjustment: true}, owners: namespaces,
			want: `plugin "31-ipc" adjusted namespace "ipc", which is not allowed; plugin "30-net" adjusted namespace "network", which is not allowed`},
		{name: "no namespaces", cfg: validator.Config{Enable: true, RejectNamespaceAdjustment: true}, owners: sysctls},
		{name: "sysctls allowed", cfg: validator.Config{Enable: true}, owners: sysctls},
		{name: "sysctls rejected", cfg: validator.Config{Enable: true, RejectSysctlAdjustment: true}, owners: sysctls,
			want: `plugin "41-shm" adjusted sysctl "kernel.shmmax", which is not allowed; plugin "40-fwd" adjusted sysctl "net.ipv4.ip_forward", which is not allowed`},
		{name: "no sysctls", cfg: validator.Config{Enable: true, RejectSysctlAdjustment: true}, owners: namespaces},

		// Everything at once.
		{name: "all problems reported", cfg: everything, owners: owned{
			simple: map[api.Field]string{api.Field_OciHooks: "10-hook", api.Field_SeccompPolicy: "20-sec"},
			compound: map[api.Field]map[string]string{
				api.Field_Namespace: {"pid": "30-ns"},
				api.Field_Sysctl:    {"vm.swappiness": "40-sys"},
			},
		}, profile: profile(api.SecurityProfile_RUNTIME_DEFAULT, ""),
			want: `plugin "10-hook" injected OCI hooks, which is not allowed; ` +
				`plugin "20-sec" set the seccomp policy of a container with the runtime default seccomp profile, which is not allowed; ` +
				`plugin "30-ns" adjusted namespace "pid", which is not allowed; ` +
				`plugin "40-sys" adjusted sysctl "vm.swappiness", which is not allowed; ` +
				`required plugin "policy" (from configuration) is not present`},
	}
	for _, tt := range tests {
		req := &api.ValidateContainerAdjustmentRequest{
			Pod:       &api.PodSandbox{Id: "pod-id", Name: "pod"},
			Container: &api.Container{Id: ctrID, Name: "app", Linux: &api.LinuxContainer{SeccompProfile: tt.profile}},
			Adjust:    &api.ContainerAdjustment{},
			Owners:    tt.owners.proto(),
		}
		err := validator.New(tt.cfg).ValidateContainerAdjustment(context.Background(), req)
		if got := errText(err); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestOwnersOfOtherContainersIgnored(t *testing.T) {
	cfg := validator.Config{Enable: true, RejectOCIHookAdjustment: true, RejectSysctlAdjustment: true}
	o := owned{
		simple:   map[api.Field]string{api.Field_OciHooks: "10-hook"},
		compound: map[api.Field]map[string]string{api.Field_Sysctl: {"a": "10-hook"}},
	}
	req := &api.ValidateContainerAdjustmentRequest{
		Container: &api.Container{Id: "other-id", Name: "app"},
		Owners:    o.proto(),
	}
	if err := validator.New(cfg).ValidateContainerAdjustment(context.Background(), req); err != nil {
		t.Errorf("owners of %q applied to container %q: %v", ctrID, "other-id", err)
	}
}

func TestEmptyRequests(t *testing.T) {
	v := validator.New(validator.Config{
		Enable: true, RejectOCIHookAdjustment: true, RejectUnconfinedSeccompAdjustment: true,
		RejectNamespaceAdjustment: true, RejectSysctlAdjustment: true,
	})
	if err := v.ValidateContainerAdjustment(context.Background(), nil); err != nil {
		t.Errorf("ValidateContainerAdjustment(nil) = %v", err)
	}
	if err := v.ValidateContainerAdjustment(context.Background(), &api.ValidateContainerAdjustmentRequest{}); err != nil {
		t.Errorf("ValidateContainerAdjustment(empty) = %v", err)
	}
	if err := v.ValidatePodSandbox(context.Background(), nil, nil); err != nil {
		t.Errorf("ValidatePodSandbox(nil) = %v", err)
	}
}

func TestRemovalNamesTheRemover(t *testing.T) {
	v := validator.New(validator.Config{Enable: true, RejectSysctlAdjustment: true})
	req := &api.ValidateContainerAdjustmentRequest{
		Container: &api.Container{Id: "c"},
		Owners: &api.OwningPlugins{Owners: map[string]*api.FieldOwners{"c": {Compound: map[int32]*api.CompoundFieldOwners{
			int32(api.Field_Sysctl): {Owners: map[string]string{"net.x": "-20-b"}},
		}}}},
	}
	err := v.ValidateContainerAdjustment(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), `plugin "20-b" removed sysctl "net.x"`) {
		t.Fatalf("error %v, want it to name 20-b as the remover", err)
	}
}
