package multinet

// AddrOwners lists the allocator owners of network name (none without
// subnets).
func (m *Manager) AddrOwners(name string) ([]string, error) {
	n := m.nets[name]
	if n == nil || n.alloc == nil {
		return nil, nil
	}
	return n.alloc.Owners()
}

// HostVethName is the host end of owner's interface ifName.
var HostVethName = hostVethName
