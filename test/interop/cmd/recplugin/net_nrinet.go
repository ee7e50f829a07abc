//go:build !upstream

package main

import (
	"context"

	"github.com/nrinet/nrinet/api"
)

// PodSandboxStatus makes the nrinet build a pod network extension plugin,
// so the interop tests show that it subscribes to the extension's event
// only with runtimes that advertise it.
func (r *recorder) PodSandboxStatus(_ context.Context, pod *api.PodSandbox, verbose bool) (*api.PodSandboxNetwork, error) {
	r.write(record{Event: "PodSandboxStatus", Pod: pj(pod)})
	return &api.PodSandboxNetwork{Ips: []string{"198.18.0.42"}}, nil
}
