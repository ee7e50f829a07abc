package api

// NetworkNamespace is the LinuxNamespace type of a network namespace.
const NetworkNamespace = "network"

// NetNSPath returns the path of the pod's network namespace, taken from the
// "network" entry of its Linux namespaces, or "" if there is none. It is
// safe to call on a nil pod.
func (p *PodSandbox) NetNSPath() string {
	for _, ns := range p.GetLinux().GetNamespaces() {
		if ns.GetType() == NetworkNamespace {
			return ns.GetPath()
		}
	}
	return ""
}
