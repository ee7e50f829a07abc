// Package kubee2e is the Kubernetes end-to-end suite (make e2e-kube):
// nri-podnet against a real Kubernetes control plane, built from the Go
// module proxy by hack/kube.sh (etcd v3.7.0, Kubernetes v1.37.2).
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
//     each running nrinetd (cmd/nrinetd) with nri-podnet (cmd/nri-podnet,
//     -kube) on its NRI socket; pods run with crictl on each node reach
//     each other in both families through nri-podnet's routes, the other
//     node, and an "outside" namespace, which sees the node's address
//     (nri-podnet's masquerade). The test makes no route.
//   - 3-real-node: a node namespace running the kubelet with containerd on
//     nrinet (hack/containerd.sh) in network mode nri, kube-scheduler, and
//     nri-podnet as the DaemonSet of deploy/ (kubectl apply -k of a test
//     overlay, the Node labelled nrinet.io/pod-network=podnet) with the image hack/image builds from this checkout and
//     pushes to the suite's registry on 127.0.0.1, which the node pulls; a
//     Deployment of busybox pods runs, each pod's addresses agree between
//     the API, kubectl, CRI and its eth0, and the pods ping each other;
//     restarting the kubelet, containerd and the DaemonSet's pod, and
//     upgrading nri-podnet to a second image (kubectl set image), keep
//     every pod's sandbox and addresses; with the DaemonSet's pod gone the
//     pods keep theirs and a new pod waits until it is back. Then stage 4:
//     docs/deploy.md's uninstall (kubectl delete -k, nri-podnet
//     -uninstall) removes nri-podnet's routes, nftables table and bridge.
//
// TestAdversarial (make e2e-adversarial, and part of make e2e-kube) is
// the port security suite: stage 2's two nodes and outside host, six pods,
// and a pod that attacks the others with raw frames (forged sources, VLAN
// tags, another pod's MAC, ARP, neighbour and router advertisements,
// redirects), host ports on addresses not its node's, and a policy of
// 20,000 excepts; each attack must be counted in nri-podnet's metrics and
// never reach its victim, and the legitimate flows must work, without
// NetworkPolicies and with them.
//
// TestMigration (make e2e-migration, and part of make e2e-kube) moves a
// live two-node cluster of real kubelets from CNI (stock containerd, the
// reference plugins) to nrinet (containerd on nrinet in network mode nri,
// nri-podnet's DaemonSet) and back, node by node, with the runbook of
// docs/install.md, whose steps it reads from the page
// (TestMigrationRunbook_MatchesStage checks them without a cluster): a
// Service requested every 100 ms from a client pod fails no request
// outside a drain window, every pod keeps its addresses, the two
// networks' pods reach each other while the cluster is mixed, nothing of a
// network is left on a node that left it, and the DaemonSet's pod runs
// only on the nodes labelled for it, never restarting.
//
// TestHelm (make e2e-helm, and part of make e2e-kube) installs nri-podnet
// with the Helm chart deploy/helm/nrinet on a real kubelet node, with
// Helm v4's library (deploy/test's cmd/helm-release: helm install,
// upgrade, status, uninstall): the release deployed, every object of its
// manifest Helm's and labelled as the chart's, the DaemonSet's pod Ready
// on the labelled node, pods with their network; helm upgrade with a
// changed value rolls the DaemonSet while the pods keep their addresses;
// helm uninstall leaves nothing of the chart in the API and the node as
// stage 4's kubectl delete -k does.
//
// TestMultinetwork (make e2e-multinetwork, and part of make e2e-kube) runs
// nri-podnet's DaemonSet with -multinetwork (deploy/overlays/
// nri-podnet-multinetwork) on two real kubelet nodes joined by a second
// segment: pods claim secondary networks through the ResourceClaimTemplates
// of deploy/examples/multinetwork (a bridged network across the nodes, a
// macvlan network, a host interface moved into a pod), get net1 and net2
// beside eth0 and reach each other over them; each claim's status carries
// the interface's networkData; a kill of nri-podnet changes nothing; the
// bad claims (an unknown network, an exhausted subnet, a host interface
// taken, a pod on the host network) fail with their reason in an event and
// the claim's status; a pod removed while nri-podnet is away goes once it
// is back; and with every pod gone no interface, record or address is
// left.
//
// docs/dev/kube-e2e.md says exactly what each stage checks and how long it
// all takes.
//
// For running Kubernetes' own [sig-network] e2e specs (e2e.test, which
// hack/kube.sh builds) against the cluster network, the package also has
// writeE2EImages, which writes the images those specs run (agnhost,
// glibc-dns-testing, nginx, busybox, pause, CoreDNS) offline under their
// published names, and the selection of specs in conformance/ (focus.txt,
// skip.txt, and the specs they select, selected-specs.txt);
// TestE2EImages and TestE2ESelection check both. TestConformance runs
// them (docs/results/conformance.md) on a baseline cluster, on nrinet, and
// on the mixed cluster (make conformance-mixed), whose node b runs CRI-O
// on nrinet under its kubelet instead of containerd (crionode_test.go:
// CRI-O pulls the images from the suite's registry). make conformance-all
// runs every [Conformance] spec of every SIG (TestConformanceAll), with
// the selection of conformance/all/ (TestE2ESelection_All checks it) and
// the images of conformanceAllImages besides (TestConformanceAllImages).
//
// The tests need root, iproute2, ping and crictl (stage 3 also runc, a
// static busybox and nft), and run only with NRINET_KUBE_E2E=1; without
// it they skip. Every process, network namespace, link, mount, cgroup and
// file a test makes is removed by PID or exact name when it ends, and the test
// fails if anything of it is left.
package kubee2e
