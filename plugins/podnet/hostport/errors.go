package hostport

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers match them with [errors.Is]; the messages of
// the errors that wrap them quote the values involved.
var (
	// ErrConflict is matched by the error of [Mapper.Add] when a mapping
	// asks for a host port another pod holds. The concrete error is a
	// [*ConflictError] naming both pods.
	ErrConflict = errors.New("hostport: host port in use")

	// ErrInvalidMapping is wrapped by the errors of [Mapper.Add] and
	// [Mapper.Sync] for a mapping that cannot be set up: a port out of
	// range, an unknown protocol, a host IP that is no IP address or of a
	// family the pod has no address of.
	ErrInvalidMapping = errors.New("hostport: invalid port mapping")

	// ErrNotLocal is matched by the error of [Mapper.Add] and [Mapper.Sync]
	// for a mapping whose host IP is not an address of the node: a host
	// port on another pod's or a remote address would take that
	// address's connections over. The concrete error is a
	// [*NotLocalError].
	ErrNotLocal = errors.New("hostport: host IP is not an address of this node")
)

// NotLocalError reports that Pod asked for a host port on a host IP that
// is none of the node's addresses. It matches [ErrNotLocal].
type NotLocalError struct {
	Pod     PodRef
	Mapping Mapping
}

func (e *NotLocalError) Error() string {
	return fmt.Sprintf("hostport: pod %s: host port %s: host IP %s is not an address of this node (a host port is published on the node's own addresses only)",
		e.Pod, e.Mapping.hostSide(), e.Mapping.HostIP)
}

// Is reports whether target is [ErrNotLocal].
func (e *NotLocalError) Is(target error) bool { return target == ErrNotLocal }

// ConflictError reports that Pod asked for a host port that Holder
// holds: same protocol and port, and host IPs that overlap (equal, or one
// of them every local address of a family the other's is of). It matches
// [ErrConflict] with [errors.Is].
type ConflictError struct {
	// Pod is the pod that asked, Holder the one that holds the port.
	Pod, Holder PodRef
	// Wanted is Pod's mapping, Held the Holder's it collides with.
	Wanted, Held Mapping
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("hostport: pod %s: host port %s is held by pod %s (%s)", e.Pod, e.Wanted.hostSide(), e.Holder, e.Held.hostSide())
}

// Is reports whether target is [ErrConflict].
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// invalid returns an error wrapping ErrInvalidMapping for pod's mapping m.
func invalid(pod PodRef, m Mapping, format string, args ...any) error {
	return fmt.Errorf("%w: pod %s: %s: %s", ErrInvalidMapping, pod, m, fmt.Sprintf(format, args...))
}
