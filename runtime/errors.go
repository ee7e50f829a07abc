package runtime

import (
	"errors"
	"fmt"

	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/status"

	"github.com/nrinet/nrinet/merge"
)

// ErrClosed is returned by requests made after Stop.
var ErrClosed = errors.New("runtime: stopped")

// ErrNetworkNotReady is wrapped by the error of a RunPodSandbox refused
// because a required network plugin is not connected.
var ErrNetworkNotReady = errors.New("network not ready")

// ErrNoAddress is wrapped by the error of a RunPodSandbox that failed
// because a required network plugin gave the pod no address.
var ErrNoAddress = errors.New("no pod address")

// ErrInvalidUpdate is wrapped by the error a plugin gets for an
// UpdatePodSandboxNetwork that is neither a network nor a withdrawal.
var ErrInvalidUpdate = errors.New("invalid pod network update")

// errNoEvictFunc answers a plugin's evictions when the runtime has no
// EvictFunc.
var errNoEvictFunc = errors.New("runtime: this runtime does not evict containers")

// PluginError is a failure of one plugin while handling a request.
type PluginError struct {
	// Plugin is the plugin's full name, "NN-name".
	Plugin string
	// Method is the RPC that failed, e.g. "RunPodSandbox".
	Method string
	// Err is the underlying error: the plugin's own error status, a
	// timeout or a transport error.
	Err error
}

func (e *PluginError) Error() string {
	msg := e.Err.Error()
	if st, ok := status.FromError(e.Err); ok {
		msg = st.Message()
	}
	return fmt.Sprintf("plugin %q: %s: %s", e.Plugin, e.Method, msg)
}

func (e *PluginError) Unwrap() error { return e.Err }

// ConflictError reports two plugins setting the same field in one request.
type ConflictError = merge.ConflictError

// isTransportError reports whether err means the connection to the plugin
// is gone or unusable, rather than an answer from the plugin.
func isTransportError(err error) bool {
	return errors.Is(err, ttrpc.ErrClosed) || errors.Is(err, ttrpc.ErrServerClosed) ||
		errors.Is(err, ttrpc.ErrProtocol)
}
