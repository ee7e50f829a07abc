package cri

import (
	"fmt"
	"sync"
)

// names reserves sandbox names (name_namespace_uid_attempt) for the
// sandboxes that exist and those being created, as containerd does, so
// that one configuration never yields two sandboxes.
type names struct {
	mu sync.Mutex // guards byName
	// byName maps a reserved name to the sandbox ID holding it.
	byName map[string]string
}

// reserve takes name for id, failing with ErrNameReserved if another ID
// holds it.
func (n *names) reserve(name, id string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if holder, ok := n.byName[name]; ok && holder != id {
		return fmt.Errorf("%w: %q is held by sandbox %s", ErrNameReserved, name, holder)
	}
	if n.byName == nil {
		n.byName = map[string]string{}
	}
	n.byName[name] = id
	return nil
}

// release frees name if id holds it.
func (n *names) release(name, id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byName[name] == id {
		delete(n.byName, name)
	}
}
