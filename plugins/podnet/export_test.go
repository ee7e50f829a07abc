package podnet

// HostVethName exposes the host veth's name of a pod to the tests.
var HostVethName = hostVethName
