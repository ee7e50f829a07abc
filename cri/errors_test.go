package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

func TestGrpcCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"not found", notFound("abc"), codes.NotFound},
		{"invalid", fmt.Errorf("x: %w", ErrInvalid), codes.InvalidArgument},
		{"pod too large", fmt.Errorf("RunPodSandbox: NRI: %w", &api.TooLargeError{What: "pod", ID: "p", Size: 5 << 20, Limit: api.MaxObjectSize}), codes.InvalidArgument},
		{"name reserved", fmt.Errorf("x: %w", ErrNameReserved), codes.AlreadyExists},
		{"runtime closed", fmt.Errorf("x: %w", runtime.ErrClosed), codes.Unavailable},
		{"no address from a required plugin", fmt.Errorf("x: %w", runtime.ErrNoAddress), codes.FailedPrecondition},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{"disk full", fmt.Errorf("storing: %w", &fs.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}), codes.ResourceExhausted},
		{"quota exceeded", fmt.Errorf("storing: %w", &fs.PathError{Op: "write", Path: "/x", Err: syscall.EDQUOT}), codes.ResourceExhausted},
		{"plugin's status", fmt.Errorf("x: %w", status.Error(codes.PermissionDenied, "no")), codes.PermissionDenied},
		{"other", errors.New("x"), codes.Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := grpcCode(tc.err); got != tc.want {
				t.Errorf("grpcCode(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
