package critest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// The image critest's specs run (framework.DefaultLinuxContainerImage),
// which the suites' registries serve in place of registry.k8s.io.
const (
	TestImageRepo = "e2e-test-images/busybox"
	TestImageTag  = "1.29-2"
	TestImageHost = "registry.k8s.io"
)

// Options says how to run critest.
type Options struct {
	// Bin is the critest binary.
	Bin string
	// Endpoint is the runtime's CRI socket (unix://...), NRISocket its
	// NRI socket.
	Endpoint, NRISocket string
	// CrictlConfig, if set, is passed as -config.
	CrictlConfig string
	// Focus is the specs' -ginkgo.focus.
	Focus string
	// Report is where the Ginkgo JSON report goes, Log critest's output.
	Report, Log string
	// Dir is critest's working directory (it looks for crictl.yaml there).
	Dir string
	// TestImagesFile, if set, is passed as -test-images-file: a YAML file
	// naming images to use instead of critest's own
	// (defaultTestContainerImage, webServerTestImage).
	TestImagesFile string
	// Timeout bounds the run.
	Timeout time.Duration
}

// Run runs critest as o says and returns when it exits; a non-zero exit
// (a spec failed) is returned as an error too, so callers read the
// report either way.
func Run(ctx context.Context, o Options) error {
	log, err := os.Create(o.Log)
	if err != nil {
		return err
	}
	defer log.Close()
	args := []string{
		"-runtime-endpoint", o.Endpoint, "-image-endpoint", o.Endpoint,
		"-ginkgo.focus", o.Focus, "-ginkgo.no-color", "-ginkgo.v", "-ginkgo.json-report", o.Report,
		"-ginkgo.timeout", o.Timeout.String(),
	}
	if o.NRISocket != "" {
		args = append(args, "-nri-socket", o.NRISocket)
	}
	if o.CrictlConfig != "" {
		args = append(args, "-config", o.CrictlConfig)
	}
	if o.TestImagesFile != "" {
		args = append(args, "-test-images-file", o.TestImagesFile)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.Bin, args...)
	cmd.Dir = o.Dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("critest: %w", err)
	}
	return nil
}
