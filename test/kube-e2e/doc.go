// Package kubee2e is the Kubernetes end-to-end suite (make e2e-kube):
// nri-podnet against a real Kubernetes control plane, built from the Go
// module proxy by hack/kube.sh (etcd v3.6.16, Kubernetes v1.34.4).
//
// TestKube starts one control plane for its stages, everything under one
// temporary directory: etcd on loopback ports of its own, kube-apiserver
// on an address of an "underlay" bridge the test creates (198.18.0.0/15),
// with certificates the test makes (crypto/x509), and
// kube-controller-manager allocating dual-stack node CIDRs. The stages:
//
//   - 1-control-plane: two Node objects registered with InternalIPs get a
//     dual-stack spec.podCIDRs each from the controller-manager.
//   - 2-two-nodes: two nodes as network namespaces on the underlay bridge,
//     each running nrinetd (cmd/nrinetd) with nri-podnet (cmd/nri-podnet)
//     on its NRI socket, subnets from its Node's spec.podCIDRs; pods run
//     with crictl on each node reach each other in both families, the
//     other node, and an "outside" namespace.
//   - 3-real-node: a node namespace running the kubelet with containerd on
//     nrinet (hack/containerd.sh) in network mode nri and nri-podnet, and
//     kube-scheduler; a Deployment of busybox pods runs, each pod's
//     addresses agree between the API, kubectl, CRI and its eth0, and the
//     pods ping each other; restarting the kubelet, containerd and
//     nri-podnet keeps every pod's sandbox and addresses; with nri-podnet
//     down the pods keep theirs and a new pod waits until it is back.
//
// docs/kube-e2e.md says exactly what each stage checks, which checks rely
// on routes the test makes itself until nri-podnet manages them, and how
// long it all takes.
//
// The tests need root, iproute2, ping and crictl (stage 3 also runc and a
// static busybox), and run only with NRINET_KUBE_E2E=1; without it they
// skip. Every process, network namespace, link, mount, cgroup and file a
// test makes is removed by PID or exact name when it ends, and the test
// fails if anything of it is left.
package kubee2e
