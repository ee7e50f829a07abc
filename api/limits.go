package api

import (
	"errors"
	"fmt"
)

// Size limits that hold end to end: a runtime accepts no pod or container it
// could not later send to a plugin, in a lifecycle request or in
// Synchronize.
const (
	// MaxMessageSize is the largest message ttrpc carries (its
	// messageLengthMax): every request to a plugin must fit in it.
	MaxMessageSize = 4 << 20
	// MaxObjectSize is the largest encoded pod (PodSandbox) or container
	// (Container) a runtime accepts: half of MaxMessageSize less room for
	// the request envelope, so that a pod and one of its containers
	// always fit in one CreateContainerRequest, and any single item in a
	// Synchronize chunk of its own.
	MaxObjectSize = MaxMessageSize/2 - 32<<10
)

// ErrTooLarge is wrapped by a *TooLargeError.
var ErrTooLarge = errors.New("too large")

// TooLargeError reports a pod or container whose encoding exceeds
// MaxObjectSize.
type TooLargeError struct {
	What  string // "pod" or "container"
	ID    string // its ID, or namespace/name when it has none yet
	Size  int    // encoded size in bytes
	Limit int    // the limit it exceeds
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s %q encodes to %d bytes, more than the %d-byte limit (labels, annotations and other metadata count)", e.What, e.ID, e.Size, e.Limit)
}

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// CheckPodSize returns a *TooLargeError if pod encodes to more than
// MaxObjectSize bytes.
func CheckPodSize(pod *PodSandbox) error {
	if n := pod.SizeVT(); n > MaxObjectSize {
		return &TooLargeError{What: "pod", ID: podLabel(pod), Size: n, Limit: MaxObjectSize}
	}
	return nil
}

// CheckContainerSize returns a *TooLargeError if ctr encodes to more than
// MaxObjectSize bytes.
func CheckContainerSize(ctr *Container) error {
	if n := ctr.SizeVT(); n > MaxObjectSize {
		id := ctr.GetId()
		if id == "" {
			id = ctr.GetName()
		}
		return &TooLargeError{What: "container", ID: id, Size: n, Limit: MaxObjectSize}
	}
	return nil
}

func podLabel(pod *PodSandbox) string {
	if id := pod.GetId(); id != "" {
		return id
	}
	return pod.GetNamespace() + "/" + pod.GetName()
}
