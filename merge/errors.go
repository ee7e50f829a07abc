package merge

import "fmt"

// ConflictError reports two plugins setting the same field in one request.
type ConflictError struct {
	// Field names what was set, e.g. `env "PATH" of container "c1"`.
	Field string
	// Plugin tried to set Field after Owner had set (or removed) it.
	Plugin, Owner string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("plugins %q and %q both tried to set %s", e.Plugin, e.Owner, e.Field)
}
