package cri

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

// Errors of the sandbox store and server. RPCs return them as gRPC status
// errors with the code grpcCode picks.
var (
	// ErrClosed is returned by Serve after Shutdown or Close, and by a
	// Store after Close.
	ErrClosed = errors.New("cri: closed")
	// ErrNotFound is wrapped by errors about an unknown sandbox ID
	// (gRPC NotFound).
	ErrNotFound = errors.New("sandbox not found")
	// ErrAmbiguous is wrapped when an ID prefix matches several sandboxes
	// (gRPC InvalidArgument).
	ErrAmbiguous = errors.New("ambiguous sandbox ID prefix")
	// ErrNameReserved is wrapped when a sandbox name is already taken
	// (gRPC AlreadyExists).
	ErrNameReserved = errors.New("sandbox name is reserved")
	// ErrInvalid is wrapped by errors about a malformed request (gRPC
	// InvalidArgument).
	ErrInvalid = errors.New("invalid request")
	// ErrNetworkNotReady is wrapped when a required network plugin is not
	// connected (gRPC Unavailable).
	ErrNetworkNotReady = errors.New("network not ready")
	// ErrNotSupported is returned where network namespaces do not exist
	// (every platform but Linux).
	ErrNotSupported = errors.New("cri: network namespaces are not supported on this platform")
)

// grpcCode picks the gRPC code for err: from the sentinels above, a
// validator's rejection or a required network plugin that gave a pod no
// address (FailedPrecondition), a pod
// or container too large for NRI (api.ErrTooLarge: InvalidArgument), a
// context error, the runtime being stopped, a full disk or exhausted quota
// (ResourceExhausted), or a gRPC status inside err (a plugin's own error
// code).
func grpcCode(err error) codes.Code {
	switch {
	case err == nil:
		return codes.OK
	case errors.Is(err, ErrNotFound):
		return codes.NotFound
	case errors.Is(err, ErrAmbiguous), errors.Is(err, ErrInvalid), errors.Is(err, api.ErrTooLarge):
		return codes.InvalidArgument
	case errors.Is(err, ErrNameReserved):
		return codes.AlreadyExists
	case errors.Is(err, ErrNetworkNotReady), errors.Is(err, runtime.ErrNetworkNotReady), errors.Is(err, runtime.ErrClosed), errors.Is(err, ErrClosed):
		return codes.Unavailable
	case errors.As(err, new(*runtime.RejectedError)), errors.Is(err, runtime.ErrNoAddress):
		return codes.FailedPrecondition
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return codes.ResourceExhausted
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.OK {
		return st.Code()
	}
	return codes.Unknown
}

// toStatus turns err into a gRPC status error that keeps err's whole
// message.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	return status.Error(grpcCode(err), err.Error())
}

// notFound returns the error for an unknown sandbox ID.
func notFound(id string) error {
	return fmt.Errorf("sandbox %q: %w", id, ErrNotFound)
}
