package multinet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// Interface is a secondary interface of a pod, as attached.
type Interface struct {
	// Claim is the request's claim ("namespace/name"), Network its network.
	Claim   string `json:"claim"`
	Ref     string `json:"ref,omitempty"` // the request's Ref
	Network string `json:"network"`
	Kind    Kind   `json:"kind"`
	// Name is the interface's name in the pod (net1, ...).
	Name string `json:"name"`
	// MAC is its hardware address.
	MAC string `json:"mac"`
	// Addrs are its addresses from the network's allocator, with the
	// subnet's length.
	Addrs []netip.Prefix `json:"addrs,omitempty"`
	// MTU is its MTU.
	MTU int `json:"mtu,omitempty"`
	// HostName is, for a bridge network, the host end of the veth; for a
	// host network, the interface's name on the host (it gets it back at
	// detach); empty for macvlan.
	HostName string `json:"hostName,omitempty"`
}

// HardwareAddr is MAC parsed.
func (i Interface) HardwareAddr() net.HardwareAddr {
	mac, _ := net.ParseMAC(i.MAC)
	return mac
}

// record is what the manager keeps of one owner's interfaces on disk, so
// that a restarted process can detach them: written before the first
// interface is made, removed after the last is gone.
type record struct {
	Owner string `json:"owner"`
	// Pod is the owner's pod, namespace/name (Attach's forPod); empty in
	// records written before it was kept.
	Pod string `json:"pod,omitempty"`
	// NetNS is the path of the owner's network namespace at attach.
	NetNS      string      `json:"netns,omitempty"`
	Interfaces []Interface `json:"interfaces"`
}

const recordDir = "attachments"

// ownerOK: an owner names a file; it may not hold a slash or be a dot
// name, and is at most 200 bytes.
func ownerOK(owner string) bool {
	return owner != "" && len(owner) <= 200 && owner != "." && owner != ".." && !strings.ContainsAny(owner, "/\x00")
}

func (m *Manager) recordPath(owner string) string {
	return filepath.Join(m.dir, recordDir, owner+".json")
}

// readRecord returns owner's record, or ok false if it has none.
func (m *Manager) readRecord(owner string) (rec record, ok bool, err error) {
	b, err := os.ReadFile(m.recordPath(owner))
	if errors.Is(err, fs.ErrNotExist) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, fmt.Errorf("multinet: reading the record of %s: %w", owner, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return record{}, false, fmt.Errorf("multinet: record of %s: %w", owner, err)
	}
	return rec, true, nil
}

// writeRecord replaces owner's record atomically (a temporary file
// renamed over it, after fsync).
func (m *Manager) writeRecord(rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	path := m.recordPath(rec.Owner)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("multinet: writing the record of %s: %w", rec.Owner, err)
	}
	_, err = tmp.Write(b)
	if err == nil && !m.noSync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("multinet: writing the record of %s: %w", rec.Owner, err)
	}
	return nil
}

func (m *Manager) removeRecord(owner string) error {
	if err := os.Remove(m.recordPath(owner)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("multinet: removing the record of %s: %w", owner, err)
	}
	return nil
}

// records lists every owner's record.
func (m *Manager) records() ([]record, error) {
	ents, err := os.ReadDir(filepath.Join(m.dir, recordDir))
	if err != nil {
		return nil, fmt.Errorf("multinet: listing records: %w", err)
	}
	var out []record
	for _, e := range ents {
		owner, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		rec, ok, err := m.readRecord(owner)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rec)
		}
	}
	return out, nil
}
