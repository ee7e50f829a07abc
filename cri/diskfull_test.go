package cri_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fill writes zeros to path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err = f.Write(buf); err != nil {
			break
		}
	}
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("filling %s: %v, want ENOSPC", path, err)
	}
}

// TestRunPodSandbox_DiskFull: a sandbox that cannot be stored because the
// state directory's file system is full is refused with ResourceExhausted,
// and nothing of it is left; once there is room, the same configuration
// succeeds.
func TestRunPodSandbox_DiskFull(t *testing.T) {
	e := newEnv(t, envConfig{stateTmpfs: true})
	filler := filepath.Join(e.dir, "state", "filler")
	fill(t, filler)
	cfg := podConfig(1, false)
	// Big enough to need new pages in the store file.
	cfg.Labels["example.com/big"] = strings.Repeat("x", 256<<10)
	before := sandboxNamespaces()

	_, err := e.client.RunPodSandbox(context.Background(), &criapi.RunPodSandboxRequest{Config: cfg})
	wantCode(t, err, codes.ResourceExhausted, "RunPodSandbox with the state directory full")
	if !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("error %v does not say why", err)
	}
	if got := e.list(nil); len(got) != 0 {
		t.Errorf("ListPodSandbox = %v after a failed RunPodSandbox", got)
	}
	if leaked := newNamespaces(before); len(leaked) != 0 {
		t.Errorf("network namespaces leaked: %v", leaked)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	e.removePod(e.run(cfg))
}
