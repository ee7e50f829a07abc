package runtime

import (
	"errors"
	"fmt"

	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/status"
)

// ErrClosed is returned by requests made after Stop.
var ErrClosed = errors.New("runtime: stopped")

// ErrNetworkNotReady is wrapped by the error of a RunPodSandbox refused
// because a required network plugin is not connected.
var ErrNetworkNotReady = errors.New("network not ready")

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
type ConflictError struct {
	// Field names what was set, e.g. `annotation "team"` or `env "PATH"`.
	Field string
	// Plugin tried to set Field after Owner had set it.
	Plugin, Owner string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("plugins %q and %q both tried to set %s", e.Plugin, e.Owner, e.Field)
}

// isTransportError reports whether err means the connection to the plugin
// is gone or unusable, rather than an answer from the plugin.
func isTransportError(err error) bool {
	return errors.Is(err, ttrpc.ErrClosed) || errors.Is(err, ttrpc.ErrServerClosed) ||
		errors.Is(err, ttrpc.ErrProtocol)
}
