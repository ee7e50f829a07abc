package ipam

import (
	"errors"
	"net/netip"
)

// Sentinel errors. Callers match them with [errors.Is]; the messages of
// errors that wrap them quote the values involved.
var (
	// ErrExhausted is matched by the error Allocate returns when a subnet
	// has no free address left. The concrete error is an [*ExhaustedError]
	// naming the subnet.
	ErrExhausted = errors.New("ipam: no free address")

	// ErrInvalidConfig is wrapped by every error from [Config.Validate] and
	// [ParseConfig].
	ErrInvalidConfig = errors.New("ipam: invalid config")

	// ErrInvalidOwner is returned for an empty or oversized owner string.
	ErrInvalidOwner = errors.New("ipam: invalid owner")

	// ErrClosed is returned by methods of an [Allocator] after Close.
	ErrClosed = errors.New("ipam: allocator closed")

	// ErrLocked is returned by [Open] when another process holds the store's
	// file lock for longer than [WithTimeout]'s time.
	ErrLocked = errors.New("ipam: store locked by another process")

	// ErrCorrupt is wrapped by errors that report a store whose contents
	// break the layout or the ownership invariant described in the package
	// documentation. [Allocator.Check] returns it.
	ErrCorrupt = errors.New("ipam: store corrupt")

	// ErrIncompatibleStore is returned by [Open] for a store written with a
	// newer, unknown layout version.
	ErrIncompatibleStore = errors.New("ipam: incompatible store layout")
)

// ExhaustedError reports that Subnet has no address left to allocate. It
// matches [ErrExhausted] with [errors.Is].
type ExhaustedError struct {
	Subnet netip.Prefix
}

func (e *ExhaustedError) Error() string {
	return "ipam: no free address in " + e.Subnet.String()
}

// Is reports whether target is [ErrExhausted].
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }
