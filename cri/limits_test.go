package cri_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/internal/testutil"
)

// bigLabels returns n labels whose values have size bytes each.
func bigLabels(n, size int) map[string]string {
	l := make(map[string]string, n)
	for i := range n {
		l[fmt.Sprintf("example.com/big-%d", i)] = strings.Repeat("x", size)
	}
	return l
}

// manyLabels returns n small labels.
func manyLabels(n int) map[string]string {
	l := make(map[string]string, n)
	for i := range n {
		l[fmt.Sprintf("example.com/label-%06d", i)] = "x"
	}
	return l
}

// TestRunPodSandbox_SizeLimit: a pod whose NRI encoding is larger than
// api.MaxObjectSize, which plugins could not be sent in Synchronize, is
// refused with InvalidArgument naming the size and the limit, before
// anything is created or any plugin called; up to the kubelet's 16 MiB a
// CRI request gets that answer, not a transport error.
func TestRunPodSandbox_SizeLimit(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	e := newEnv(t, envConfig{})
	p := &netPlugin{}
	e.startNetPlugin(p)
	ctx := context.Background()
	if n := (&api.PodSandbox{Labels: manyLabels(100_000)}).SizeVT(); n <= api.MaxObjectSize {
		t.Fatalf("100k labels encode to %d bytes, not more than the limit %d: make them longer", n, api.MaxObjectSize)
	}
	for i, tc := range []struct {
		name   string
		labels map[string]string
		ok     bool
	}{
		{"1 MiB of labels", bigLabels(16, 64<<10), true},
		{"a label as large as the limit", bigLabels(1, api.MaxObjectSize), false},
		{"100k small labels", manyLabels(100_000), false},
		{"6 MiB of labels, more than gRPC's default 4 MiB", bigLabels(96, 64<<10), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := podConfig(i, false)
			maps.Copy(cfg.Labels, tc.labels)
			before, runs := sandboxNamespaces(), p.calls()
			hooks := e.metric("nrinet_nrinetd_nri_hook_duration_seconds", map[string]string{"event": "RunPodSandbox"})
			rsp, err := e.client.RunPodSandbox(ctx, &criapi.RunPodSandboxRequest{Config: cfg})
			if err == nil {
				e.ids = append(e.ids, rsp.GetPodSandboxId()) // deleted by cleanup
			}
			if tc.ok {
				if err != nil {
					t.Fatalf("RunPodSandbox: %v", err)
				}
				if st := e.status(rsp.GetPodSandboxId(), false).GetStatus(); len(st.GetLabels()) != len(cfg.GetLabels()) {
					t.Errorf("the sandbox has %d labels, want %d", len(st.GetLabels()), len(cfg.GetLabels()))
				}
				e.removePod(rsp.GetPodSandboxId())
				return
			}
			wantCode(t, err, codes.InvalidArgument, "RunPodSandbox of a pod over the limit")
			msg := status.Convert(err).Message()
			if !strings.Contains(msg, strconv.Itoa(api.MaxObjectSize)+"-byte limit") || !strings.Contains(msg, "encodes to ") {
				t.Errorf("error %q does not name the size and the limit %d", msg, api.MaxObjectSize)
			}
			if got := e.list(nil); len(got) != 0 {
				t.Errorf("ListPodSandbox = %v after a refused pod", got)
			}
			if leaked := newNamespaces(before); len(leaked) != 0 {
				t.Errorf("network namespaces leaked: %v", leaked)
			}
			if n := e.metric("nrinet_nrinetd_nri_hook_duration_seconds", map[string]string{"event": "RunPodSandbox"}); n != hooks {
				t.Errorf("the NRI RunPodSandbox hook ran for a refused pod")
			}
			if n := p.calls(); n != runs {
				t.Errorf("the plugin was called %d times for a refused pod", n-runs)
			}
			// The name was never reserved: the same pod, smaller, runs.
			cfg.Labels = map[string]string{"app": "small"}
			e.removePod(e.run(cfg))
		})
	}
}
