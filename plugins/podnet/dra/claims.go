package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Prepared is a claim the kubelet prepared on this node: who may use it
// and which of the driver's devices it has.
type Prepared struct {
	UID       string           `json:"uid"`
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	Pods      []string         `json:"pods"` // UIDs of the pods it is reserved for
	Devices   []PreparedDevice `json:"devices"`
}

// PreparedDevice is one allocated device of a prepared claim.
type PreparedDevice struct {
	Request string `json:"request"`
	Device  string `json:"device"` // the network's name
	ShareID string `json:"shareID,omitempty"`
}

// store keeps the prepared claims in memory and, one file each, in a
// directory, so that a restarted driver knows them.
type store struct {
	dir string

	mu     sync.Mutex
	claims map[string]Prepared // by UID
}

func openStore(dir string) (*store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("dra: claims directory: %w", err)
	}
	s := &store{dir: dir, claims: map[string]Prepared{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("dra: claims directory: %w", err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("dra: %w", err)
		}
		var c Prepared
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("dra: claim file %s: %w", e.Name(), err)
		}
		s.claims[c.UID] = c
	}
	return s, nil
}

// put stores c (file first, then memory).
func (s *store) put(c Prepared) error {
	if err := s.write(c); err != nil {
		return err
	}
	s.mu.Lock()
	s.claims[c.UID] = c
	s.mu.Unlock()
	return nil
}

// write writes c's file, replacing the one before at once.
func (s *store) write(c Prepared) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	path := filepath.Join(s.dir, c.UID+".json")
	tmp := filepath.Join(s.dir, ".tmp-"+c.UID)
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("dra: storing claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("dra: storing claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// drop forgets a claim; an unknown one is fine.
func (s *store) drop(uid string) error {
	if err := os.Remove(filepath.Join(s.dir, uid+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dra: forgetting claim %s: %w", uid, err)
	}
	s.mu.Lock()
	delete(s.claims, uid)
	s.mu.Unlock()
	return nil
}

func (s *store) get(uid string) (Prepared, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.claims[uid]
	return c, ok
}

// join adds the pod to the claim of uid, unless it has it, under the
// store's lock (two pods may join one claim at once): file first, then
// memory. check may refuse the claim as it is before the pod joins.
func (s *store) join(uid, podUID string, check func(Prepared) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.claims[uid]
	if !ok || slices.Contains(c.Pods, podUID) {
		return nil
	}
	if err := check(c); err != nil {
		return err
	}
	c.Pods = append(slices.Clone(c.Pods), podUID)
	if err := s.write(c); err != nil {
		return err
	}
	s.claims[uid] = c
	return nil
}

// byName returns the prepared claim namespace/name.
func (s *store) byName(namespace, name string) (Prepared, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.claims {
		if c.Namespace == namespace && c.Name == name {
			return c, true
		}
	}
	return Prepared{}, false
}

// othersIn reports whether a claim of the namespace is prepared on this
// node and not (yet) reserved for the pod.
func (s *store) othersIn(namespace, podUID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.claims {
		if c.Namespace == namespace && !slices.Contains(c.Pods, podUID) {
			return true
		}
	}
	return false
}

// forPod lists the claims reserved for the pod, by namespace/name.
func (s *store) forPod(podUID string) []Prepared {
	s.mu.Lock()
	var out []Prepared
	for _, c := range s.claims {
		if slices.Contains(c.Pods, podUID) {
			out = append(out, c)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Prepared) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}
