package cri

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/runtime"
)

// Buckets of the store file.
var (
	bucketSandboxes = []byte("sandboxes") // id -> JSON of sandbox
	bucketNetworks  = []byte("networks")  // id -> proto of api.PodNetworkRecord
)

// Store keeps sandboxes and their pod network records in a bbolt file. It
// is safe for concurrent use. Visible sandboxes are exactly those in the
// store: a sandbox is added once its NRI RunPodSandbox hook succeeded.
type Store struct {
	db *bolt.DB

	mu sync.Mutex // guards inflight
	// inflight are sandboxes whose NRI RunPodSandbox is running or has
	// returned but which are not committed yet: a plugin that joins in
	// between must still see them in Synchronize.
	inflight map[string]*api.PodSandbox
}

// setInflight records a sandbox being created (again, with its addresses,
// once the hook returned).
func (s *Store) setInflight(pod *api.PodSandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight == nil {
		s.inflight = map[string]*api.PodSandbox{}
	}
	s.inflight[pod.GetId()] = pod
}

// dropInflight forgets a sandbox that was committed or given up.
func (s *Store) dropInflight(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, id)
}

var _ runtime.PodNetworkStore = (*Store)(nil)

// OpenStore opens (creating if needed) the store file at path. Its parent
// directory is the store's own: it is created with mode 0700, or made
// 0700 if group or others have any permission on it (see SecureDir). A
// file another process holds open makes OpenStore fail after one second.
func OpenStore(path string) (*Store, error) {
	if _, err := SecureDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("cri: store directory: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("cri: opening store %q: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketSandboxes, bucketNetworks} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("cri: initializing store %q: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// PodNetwork returns a sandbox's network record: nil for a host-network
// sandbox, an empty record for one no plugin set a network for (or that
// is stopped), and an error wrapping ErrNotFound for an unknown ID.
func (s *Store) PodNetwork(ctx context.Context, podID string) (*api.PodNetworkRecord, error) {
	sb, rec, err := s.get(podID)
	if err != nil {
		return nil, err
	}
	if sb.HostNetwork {
		return nil, nil
	}
	return rec, nil
}

// SetPodNetwork persists a record a plugin changed. Only READY sandboxes
// with a network namespace take records.
func (s *Store) SetPodNetwork(ctx context.Context, podID, plugin string, rec *api.PodNetworkRecord) error {
	return s.update(podID, func(sb *sandbox, _ *api.PodNetworkRecord) (*api.PodNetworkRecord, error) {
		switch {
		case sb.HostNetwork:
			return nil, fmt.Errorf("sandbox %q uses the host network", podID)
		case !sb.ready():
			return nil, fmt.Errorf("sandbox %q is %s", podID, sb.State)
		}
		return rec, nil
	})
}

// SyncPods is the runtime.SyncFunc of a runtime whose pods live in this
// store: every READY sandbox whose network namespace exists, with its
// addresses, so that a joining network plugin keeps what they use and
// releases the rest.
func (s *Store) SyncPods(ctx context.Context) ([]*api.PodSandbox, []*api.Container, error) {
	var pods []*api.PodSandbox
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSandboxes).ForEach(func(k, v []byte) error {
			sb, err := decodeSandbox(k, v)
			if err != nil {
				return err
			}
			if !sb.ready() || (!sb.HostNetwork && !netnsExists(sb.NetNSPath)) {
				return nil
			}
			rec, err := decodeNetwork(k, tx.Bucket(bucketNetworks).Get(k))
			if err != nil {
				return err
			}
			pods = append(pods, sb.nriPod(rec.GetNetwork().GetIps()))
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cri: listing pods for plugins: %w", err)
	}
	s.mu.Lock()
	for id, pod := range s.inflight {
		if !slices.ContainsFunc(pods, func(p *api.PodSandbox) bool { return p.GetId() == id }) {
			pods = append(pods, pod)
		}
	}
	s.mu.Unlock()
	return pods, nil, nil
}

// create adds a new sandbox with its record (nil for host network).
func (s *Store) create(sb *sandbox, rec *api.PodNetworkRecord) error {
	v, err := json.Marshal(sb)
	if err != nil {
		return err
	}
	n, err := encodeNetwork(rec)
	if err != nil {
		return err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSandboxes)
		k := []byte(sb.ID)
		if b.Get(k) != nil {
			return fmt.Errorf("sandbox %q already exists", sb.ID)
		}
		if err := b.Put(k, v); err != nil {
			return err
		}
		if rec == nil {
			return nil
		}
		return tx.Bucket(bucketNetworks).Put(k, n)
	})
	if err != nil {
		return fmt.Errorf("cri: storing sandbox %q: %w", sb.ID, err)
	}
	return nil
}

// get returns a sandbox by exact ID with its record (never nil).
func (s *Store) get(id string) (*sandbox, *api.PodNetworkRecord, error) {
	var (
		sb  *sandbox
		rec *api.PodNetworkRecord
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		k := []byte(id)
		v := tx.Bucket(bucketSandboxes).Get(k)
		if v == nil {
			return notFound(id)
		}
		var err error
		if sb, err = decodeSandbox(k, v); err != nil {
			return err
		}
		rec, err = decodeNetwork(k, tx.Bucket(bucketNetworks).Get(k))
		return err
	})
	return sb, rec, err
}

// resolve returns the ID of the one sandbox whose ID is id or starts with
// it.
func (s *Store) resolve(id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%w: empty sandbox ID", ErrInvalid)
	}
	var found []string
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketSandboxes).Cursor()
		p := []byte(id)
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			if len(k) == len(p) {
				found = []string{id}
				return nil
			}
			found = append(found, string(k))
		}
		return nil
	})
	switch {
	case err != nil:
		return "", err
	case len(found) == 0:
		return "", notFound(id)
	case len(found) > 1:
		return "", fmt.Errorf("sandbox ID prefix %q matches %d sandboxes: %w", id, len(found), ErrAmbiguous)
	}
	return found[0], nil
}

// list returns every sandbox.
func (s *Store) list() ([]*sandbox, error) {
	var out []*sandbox
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSandboxes).ForEach(func(k, v []byte) error {
			sb, err := decodeSandbox(k, v)
			if err == nil {
				out = append(out, sb)
			}
			return err
		})
	})
	return out, err
}

// update changes a sandbox and its record in one transaction: fn gets a
// copy of both and returns the record to store (nil: none). An error of
// fn is returned as is and changes nothing; errSkip changes nothing and
// update returns nil.
func (s *Store) update(id string, fn func(sb *sandbox, rec *api.PodNetworkRecord) (*api.PodNetworkRecord, error)) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		k := []byte(id)
		b, nb := tx.Bucket(bucketSandboxes), tx.Bucket(bucketNetworks)
		v := b.Get(k)
		if v == nil {
			return notFound(id)
		}
		sb, err := decodeSandbox(k, v)
		if err != nil {
			return err
		}
		rec, err := decodeNetwork(k, nb.Get(k))
		if err != nil {
			return err
		}
		rec, err = fn(sb, rec)
		if err != nil {
			return err
		}
		if v, err = json.Marshal(sb); err != nil {
			return err
		}
		if err := b.Put(k, v); err != nil {
			return err
		}
		if rec == nil {
			return nb.Delete(k)
		}
		n, err := encodeNetwork(rec)
		if err != nil {
			return err
		}
		return nb.Put(k, n)
	})
	if errors.Is(err, errSkip) {
		return nil
	}
	return err
}

// errSkip makes update change nothing and succeed.
var errSkip = errors.New("skip")

// delete forgets a sandbox; an unknown one is fine.
func (s *Store) delete(id string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		k := []byte(id)
		if err := tx.Bucket(bucketSandboxes).Delete(k); err != nil {
			return err
		}
		return tx.Bucket(bucketNetworks).Delete(k)
	})
	if err != nil {
		return fmt.Errorf("cri: deleting sandbox %q: %w", id, err)
	}
	return nil
}

func decodeSandbox(k, v []byte) (*sandbox, error) {
	sb := &sandbox{}
	if err := json.Unmarshal(v, sb); err != nil {
		return nil, fmt.Errorf("cri: sandbox %q: corrupt record: %w", k, err)
	}
	return sb, nil
}

// decodeNetwork decodes a stored record; none is an empty record.
func decodeNetwork(k, v []byte) (*api.PodNetworkRecord, error) {
	rec := &api.PodNetworkRecord{}
	if err := proto.Unmarshal(v, rec); err != nil {
		return nil, fmt.Errorf("cri: sandbox %q: corrupt network record: %w", k, err)
	}
	return rec, nil
}

func encodeNetwork(rec *api.PodNetworkRecord) ([]byte, error) {
	if rec == nil {
		return nil, nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("cri: encoding network record: %w", err)
	}
	if b == nil {
		b = []byte{} // bbolt stores an empty value, not none
	}
	return b, nil
}
