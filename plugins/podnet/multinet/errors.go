package multinet

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with [errors.Is].
var (
	// ErrHostNetwork: a pod on the host network (no network namespace of
	// its own) cannot take a secondary network.
	ErrHostNetwork = errors.New("multinet: a pod on the host network cannot take a secondary network")
	// ErrUnknownNetwork is matched by an [*UnknownNetworkError].
	ErrUnknownNetwork = errors.New("multinet: unknown network")
	// ErrHostInterfaceTaken is matched by a [*HostInterfaceTakenError].
	ErrHostInterfaceTaken = errors.New("multinet: host interface taken")
	// ErrClosed is returned after [Manager.Close].
	ErrClosed = errors.New("multinet: closed")
)

// UnknownNetworkError: a request names a network the node does not have.
type UnknownNetworkError struct {
	Network string
}

func (e *UnknownNetworkError) Error() string {
	return fmt.Sprintf("multinet: no network %q on this node", e.Network)
}

// Is reports whether target is [ErrUnknownNetwork].
func (e *UnknownNetworkError) Is(target error) bool { return target == ErrUnknownNetwork }

// HostInterfaceTakenError: the host interface of a host network is not on
// the host: Owner (empty if unknown: absent, or moved by someone else)
// has it.
type HostInterfaceTakenError struct {
	Network, Interface, Owner string
}

func (e *HostInterfaceTakenError) Error() string {
	if e.Owner != "" {
		return fmt.Sprintf("multinet: network %q: host interface %q is taken by %s", e.Network, e.Interface, e.Owner)
	}
	return fmt.Sprintf("multinet: network %q: host interface %q is not on the host", e.Network, e.Interface)
}

// Is reports whether target is [ErrHostInterfaceTaken].
func (e *HostInterfaceTakenError) Is(target error) bool { return target == ErrHostInterfaceTaken }

// RequestError names the request (its claim and interface) an error is
// about.
type RequestError struct {
	Claim, IfName string
	Err           error
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("claim %s (%s): %v", e.Claim, e.IfName, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }
