package cni_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/nrinet/nrinet/plugins/cni"
)

func TestOpError(t *testing.T) {
	cniErr := types.NewError(types.ErrTryAgainLater, "no addresses left", "range 198.18.101.0/30")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"plugin error", fmt.Errorf(`plugin type="bridge" failed (add): %w`, cniErr),
			`CNI network "net1" ADD failed: plugin type="bridge" failed (add): code 11: no addresses left (range 198.18.101.0/30)`},
		{"bare plugin error", cniErr,
			`CNI network "net1" ADD failed: code 11: no addresses left (range 198.18.101.0/30)`},
		{"other error", errors.New(`failed to find plugin "x" in path [/opt/cni/bin]`),
			`CNI network "net1" ADD failed: failed to find plugin "x" in path [/opt/cni/bin]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := error(&cni.OpError{Network: "net1", Op: "ADD", Err: tc.err})
			if err.Error() != tc.want {
				t.Errorf("error =\n%s\nwant\n%s", err, tc.want)
			}
			var ce *types.Error
			if errors.As(err, &ce) != errors.Is(tc.err, cniErr) {
				t.Errorf("errors.As(*types.Error) = %v", ce)
			}
		})
	}
}
