package chaos

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/internal/gobin"
	"github.com/nrinet/nrinet/internal/pins"
	"github.com/nrinet/nrinet/internal/testutil"
)

// crictlBin is crictl's path, "" if it could not be installed (the
// workers then use gRPC only).
var crictlBin string

// installCrictl finds crictl: NRINET_CRICTL, or the shared cache
// directory the e2e tests install it into (installing it there if
// needed, through the module proxy).
func installCrictl() (string, error) {
	if p := os.Getenv("NRINET_CRICTL"); p != "" {
		return p, nil
	}
	return gobin.Install(gobin.Dir("nrinet-crictl", pins.CRITools), "sigs.k8s.io/cri-tools/cmd/crictl", pins.CRITools)
}

// grpcCodeRe finds the gRPC code in crictl's error output.
var grpcCodeRe = regexp.MustCompile(`code = (\w+)`)

// crictlStatus runs crictl inspectp (a verbose PodSandboxStatus) and
// returns its answer as the gRPC call would: the status and the "info"
// entry, or a status error with the code crictl reports.
func crictlStatus(ctx context.Context, dir, criSock, id string) (*criapi.PodSandboxStatusResponse, error) {
	ep := "unix://" + criSock
	cfg := filepath.Join(dir, "crictl.yaml")
	if _, err := os.Stat(cfg); err != nil {
		os.WriteFile(cfg, []byte("runtime-endpoint: "+ep+"\nimage-endpoint: "+ep+"\ntimeout: 20\n"), 0o644)
	}
	cmd := exec.CommandContext(ctx, crictlBin, "--config", cfg, "--runtime-endpoint", ep, "--image-endpoint", ep,
		"--timeout", opTimeout.String(), "inspectp", "-o", "json", id)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		code := codes.Unknown
		if m := grpcCodeRe.FindStringSubmatch(stderr.String()); m != nil {
			for c := codes.OK; c <= codes.Unauthenticated; c++ {
				if c.String() == m[1] {
					code = c
				}
			}
		}
		return nil, status.Errorf(code, "crictl inspectp %s: %v: %s", id, err, strings.TrimSpace(stderr.String()))
	}
	in, err := testutil.ParsePodStatus(stdout.Bytes())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v\n%s", id, err, stdout.String())
	}
	state, ok := criapi.PodSandboxState_value[in.Status.State]
	if !ok {
		return nil, status.Errorf(codes.Internal, "crictl inspectp %s: state %q", id, in.Status.State)
	}
	st := &criapi.PodSandboxStatus{
		Id:       in.Status.ID,
		Metadata: &criapi.PodSandboxMetadata{Name: in.Status.Metadata.Name},
		State:    criapi.PodSandboxState(state),
		Network:  &criapi.PodSandboxNetworkStatus{Ip: in.Status.Network.IP},
	}
	for _, a := range in.Status.Network.AdditionalIPs {
		st.Network.AdditionalIps = append(st.Network.AdditionalIps, &criapi.PodIP{Ip: a.IP})
	}
	if len(in.Info) == 0 {
		return nil, status.Errorf(codes.Internal, "crictl inspectp %s printed no info", id)
	}
	return &criapi.PodSandboxStatusResponse{Status: st, Info: map[string]string{"info": string(in.Info)}}, nil
}
