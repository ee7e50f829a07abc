package kubee2e

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// Deadlines of the control plane's start.
const (
	etcdReadyTimeout      = 30 * time.Second
	apiserverReadyTimeout = 90 * time.Second
	// cidrTimeout bounds how long the controller-manager may take to give
	// a new Node its pod CIDRs (it starts its controllers only once the
	// apiserver's informers synced).
	cidrTimeout = 60 * time.Second
)

// controlPlane is etcd, kube-apiserver and kube-controller-manager (and,
// for a real node, kube-scheduler) with everything under dir: the
// certificates and kubeconfigs (pki/), etcd's data, the logs. The
// apiserver listens on the underlay bridge's IPv4 address, so that the
// nodes' namespaces reach it.
type controlPlane struct {
	t     testing.TB
	token string
	dir   string
	u     *underlay
	pki   *pki
	// frontProxy is the CA of the apiserver's front proxy: the client
	// certificate it shows the aggregated apiservers it proxies to, which
	// they check (the Aggregator spec's sample-apiserver).
	frontProxy *pki

	etcd, apiserver, controllerManager, scheduler *proc

	// etcdURL is etcd's client URL; saKey the service account signing
	// key (.Key) and its public key (.Cert).
	etcdURL string
	saKey   certPair

	// server is the apiserver's URL; adminConfig the kubeconfig of a
	// system:masters user, client a clientset with it.
	server      string
	adminConfig string
	client      kubernetes.Interface

	opts controlPlaneOptions
}

// controlPlaneOptions change the control plane. The zero value is the
// stages'.
type controlPlaneOptions struct {
	// extraControllers are kube-controller-manager controllers to run
	// besides controllers.
	extraControllers []string
	// noControllerManager: no kube-controller-manager at all (Nodes get
	// their pod CIDRs from whoever registers them, and no controller acts
	// on Nodes without kubelets).
	noControllerManager bool
	// family is the cluster's IP families (family_test.go); the zero
	// value is dual-stack.
	family clusterFamily
}

// family returns the control plane's IP families: those of its service
// range, of its cluster CIDRs and of its nodes.
func (cp *controlPlane) family() clusterFamily {
	return cmp.Or(cp.opts.family, familyDual)
}

// startControlPlane starts etcd, kube-apiserver and
// kube-controller-manager, and waits until the apiserver is ready
// (/readyz). The cleanup stops them (in reverse order) and removes dir.
func startControlPlane(t testing.TB) *controlPlane {
	t.Helper()
	return startControlPlaneWith(t, controlPlaneOptions{})
}

// startControlPlaneWith starts a control plane as startControlPlane does,
// changed by opts.
func startControlPlaneWith(t testing.TB, opts controlPlaneOptions) *controlPlane {
	t.Helper()
	skipUnlessEnabled(t)
	token := randHex(4)
	dir, err := os.MkdirTemp("", "nrke-"+token+"-")
	if err != nil {
		t.Fatal(err)
	}
	cp := &controlPlane{t: t, token: token, dir: dir, opts: opts}
	t.Cleanup(func() {
		// Registered first, so it runs last: after every process of the
		// control plane stopped and every namespace and link went.
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
		checkLeaks(t, token, dir)
	})
	cp.u = newUnderlay(t, token)
	if cp.pki, err = newPKI(cp.path("pki"), "nrinet-kube-e2e-ca-"+token); err != nil {
		t.Fatal(err)
	}
	if cp.frontProxy, err = newPKI(cp.path("pki", "front-proxy"), "nrinet-kube-e2e-front-proxy-ca-"+token); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cp.startEtcd()
	cp.startAPIServer()
	t.Logf("etcd and kube-apiserver ready at %s in %v", cp.server, time.Since(start).Round(time.Millisecond))
	if !opts.noControllerManager {
		cp.startControllerManager()
	}
	return cp
}

// path returns a path under dir, creating the parent directories.
func (cp *controlPlane) path(elem ...string) string {
	p := filepath.Join(append([]string{cp.dir}, elem...)...)
	if err := os.MkdirAll(p, 0o700); err != nil {
		cp.t.Fatal(err)
	}
	return p
}

// freePort returns a TCP port free on addr now. Another process may take
// it before the component listens; the addresses the suite uses are its
// own (the underlay's) or loopback, where that is rare, and a component
// that cannot listen fails the test clearly.
func freePort(t testing.TB, addr netip.Addr) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd starts a single-member etcd with its data under dir/etcd,
// listening on two free loopback ports, and waits until /health says so.
func (cp *controlPlane) startEtcd() {
	t := cp.t
	lo := netip.MustParseAddr("127.0.0.1")
	client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t, lo))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t, lo))
	cp.etcd = startProc(t, "etcd", "", nil, filepath.Join(env.kubeBin, "etcd"),
		"--name", "nrke-"+cp.token,
		"--data-dir", cp.path("etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "nrke-"+cp.token+"="+peer,
		"--initial-cluster-state", "new",
		"--log-level", "warn",
		// Tests write little; keep the memory small.
		"--quota-backend-bytes", strconv.Itoa(512<<20),
	)
	waitFor(t, "etcd /health", etcdReadyTimeout, 100*time.Millisecond, func() (bool, string) {
		if !cp.etcd.running() {
			t.Fatalf("etcd exited: %v\n%s", cp.etcd.cmd.ProcessState, cp.etcd.log.tail(40))
		}
		resp, err := http.Get(client + "/health")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	cp.etcdURL = client
}

// startAPIServer issues the apiserver's certificates and the admin's,
// starts kube-apiserver on the underlay's IPv4 address (its advertise
// address: the apiserver refuses a loopback one), its IPv6 address in an
// IPv6-only cluster (the kubernetes Service's endpoint must be of the
// service range's family), and waits until /readyz answers ok.
func (cp *controlPlane) startAPIServer() {
	t := cp.t
	addr := cp.u.gw4()
	if !cp.family().has4() {
		addr = cp.u.gw6()
	}
	port := freePort(t, addr)
	cp.server = "https://" + net.JoinHostPort(addr.String(), strconv.Itoa(port))
	serving, err := cp.pki.issue(certSpec{
		name: "apiserver", cn: "kube-apiserver", server: true,
		dns: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local", "localhost"},
		ips: []netip.Addr{cp.u.gw4(), cp.u.gw6(), netip.MustParseAddr("127.0.0.1"),
			serviceCIDR4.Addr().Next(), serviceCIDR6.Addr().Next()},
	})
	if err != nil {
		t.Fatal(err)
	}
	kubeletClient := cp.mustClientCert("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
	admin := cp.mustClientCert("admin", "nrinet-e2e-admin", "system:masters")
	proxyClient, err := cp.frontProxy.clientCert("front-proxy-client", "front-proxy-client")
	if err != nil {
		t.Fatal(err)
	}
	if cp.saKey, err = cp.pki.serviceAccountKey("sa"); err != nil {
		t.Fatal(err)
	}
	if cp.adminConfig, err = cp.pki.writeKubeconfig("admin", cp.server, admin); err != nil {
		t.Fatal(err)
	}
	cp.apiserver = startProc(t, "kube-apiserver", "", nil, filepath.Join(env.kubeBin, "kube-apiserver"),
		"--etcd-servers", cp.etcdURL,
		"--advertise-address", addr.String(),
		"--bind-address", addr.String(),
		"--secure-port", strconv.Itoa(port),
		"--cert-dir", cp.path("apiserver"),
		"--tls-cert-file", serving.Cert, "--tls-private-key-file", serving.Key,
		"--client-ca-file", cp.pki.CA,
		"--kubelet-client-certificate", kubeletClient.Cert, "--kubelet-client-key", kubeletClient.Key,
		// As kubeadm sets it: the kubelets' host names (their Nodes' names)
		// resolve nowhere here; their InternalIPs are their underlay
		// addresses (exec, logs and the proxy to nodes go there).
		"--kubelet-preferred-address-types", "InternalIP,ExternalIP,Hostname",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", cp.saKey.Cert,
		"--service-account-signing-key-file", cp.saKey.Key,
		"--service-cluster-ip-range", joinPrefixes(cp.family().serviceCIDRs()),
		"--authorization-mode", "Node,RBAC",
		"--enable-admission-plugins", "NodeRestriction",
		"--allow-privileged=true",
		"--profiling=false",
		// The front proxy, as kubeadm configures it: the aggregator
		// proxies to an aggregated apiserver (the Aggregator spec's
		// sample-apiserver) with this client certificate and the user in
		// these headers, which that apiserver trusts from the CA it reads
		// from kube-system's extension-apiserver-authentication.
		"--requestheader-client-ca-file", cp.frontProxy.CA,
		"--requestheader-allowed-names", "front-proxy-client",
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", proxyClient.Cert, "--proxy-client-key-file", proxyClient.Key,
		// This apiserver runs in the host's namespace, which has routes
		// to the pods (routeHostToPods) but no kube-proxy for Service IPs:
		// aggregated apiservers and admission and conversion webhooks are
		// reached at their Services' endpoints, not their ClusterIPs.
		"--enable-aggregator-routing=true",
		// One CPU-light apiserver on a shared machine: no priority and
		// fairness machinery, which this suite's few clients do not need.
		"--enable-priority-and-fairness=false",
	)
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	if cp.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "kube-apiserver /readyz", apiserverReadyTimeout, 250*time.Millisecond, func() (bool, string) {
		if !cp.apiserver.running() {
			t.Fatalf("kube-apiserver exited: %v\n%s", cp.apiserver.cmd.ProcessState, cp.apiserver.log.tail(60))
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		body, err := cp.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, fmt.Sprintf("%v: %s", err, body)
		}
		return strings.TrimSpace(string(body)) == "ok", string(body)
	})
}

// mustClientCert issues a client certificate for user cn in groups orgs.
func (cp *controlPlane) mustClientCert(name, cn string, orgs ...string) certPair {
	cp.t.Helper()
	c, err := cp.pki.clientCert(name, cn, orgs...)
	if err != nil {
		cp.t.Fatal(err)
	}
	return c
}

// kubeconfig issues a client certificate for user cn in groups orgs and
// writes a kubeconfig with it; it returns the kubeconfig's path.
func (cp *controlPlane) kubeconfig(name, cn string, orgs ...string) string {
	cp.t.Helper()
	path, err := cp.pki.writeKubeconfig(name, cp.server, cp.mustClientCert(name, cn, orgs...))
	if err != nil {
		cp.t.Fatal(err)
	}
	return path
}

// controllers are the kube-controller-manager controllers the suite runs:
// node IPAM (the pod CIDRs), node lifecycle (it lifts the not-ready taint
// a kubelet registers its Node with, once the Node is Ready), and what a
// Deployment of pods needs (deployments, replica sets, service accounts
// and their tokens, the root CA config map the pods' token volumes
// project, namespace and garbage collection).
var controllers = []string{
	"node-ipam-controller", "node-lifecycle-controller", "serviceaccount-controller", "serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller", "deployment-controller", "replicaset-controller",
	"daemonset-controller", "namespace-controller", "garbage-collector-controller",
}

// startControllerManager starts kube-controller-manager allocating node
// CIDRs of the control plane's families from clusterCIDR4 and
// clusterCIDR6 (dual-stack: one of each), without
// leader election and without a serving port (--secure-port 0), each
// controller with its own service account's credentials.
func (cp *controlPlane) startControllerManager() {
	t := cp.t
	kubeconfig := cp.kubeconfig("controller-manager", "system:kube-controller-manager")
	args := []string{
		"--kubeconfig", kubeconfig,
		"--secure-port", "0",
		"--leader-elect=false",
		// Each controller with its own service account and the RBAC
		// bootstrap role of that controller, as kubeadm sets it up
		// (system:kube-controller-manager alone may not patch Nodes).
		"--use-service-account-credentials=true",
		"--controllers", strings.Join(append(slices.Clone(controllers), cp.opts.extraControllers...), ","),
		"--allocate-node-cidrs=true",
		"--cluster-cidr", joinPrefixes(cp.family().clusterCIDRs()),
		"--service-cluster-ip-range", joinPrefixes(cp.family().serviceCIDRs()),
	}
	// The controller-manager refuses a mask size of a family it has no
	// cluster CIDR of.
	if cp.family().has4() {
		args = append(args, "--node-cidr-mask-size-ipv4", strconv.Itoa(nodeMask4))
	}
	if cp.family().has6() {
		args = append(args, "--node-cidr-mask-size-ipv6", strconv.Itoa(nodeMask6))
	}
	args = append(args,
		"--service-account-private-key-file", cp.saKey.Key,
		"--root-ca-file", cp.pki.CA,
		"--cluster-name", "nrke-"+cp.token,
	)
	cp.controllerManager = startProc(t, "kube-controller-manager", "", nil, filepath.Join(env.kubeBin, "kube-controller-manager"), args...)
}

// registerNode creates a Node object named name with the InternalIPs
// addrs, as a kubelet registers its node (without a kubelet: nothing
// keeps it Ready, which node IPAM does not need).
func (cp *controlPlane) registerNode(name string, addrs ...netip.Addr) {
	cp.t.Helper()
	cp.registerNodeWithCIDRs(name, nil, addrs...)
}

// registerNodeWithCIDRs registers a Node as registerNode does, with
// spec.podCIDRs set to podCIDRs when there are any (as a control plane
// without node IPAM leaves it to whoever creates the Node).
func (cp *controlPlane) registerNodeWithCIDRs(name string, podCIDRs []netip.Prefix, addrs ...netip.Addr) {
	t := cp.t
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"nrinet.io/e2e": cp.token}}}
	for _, c := range podCIDRs {
		n.Spec.PodCIDRs = append(n.Spec.PodCIDRs, c.String())
	}
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
	for _, a := range addrs {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a.String()})
	}
	ctx := t.Context()
	created, err := cp.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	if len(created.Status.Addresses) != len(addrs) {
		// Status set on create is kept for Nodes; if that ever changes,
		// set it as the kubelet does, through the status subresource.
		created.Status.Addresses = n.Status.Addresses
		if _, err := cp.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("setting Node %s's addresses: %v", name, err)
		}
	}
	t.Cleanup(func() {
		err := cp.client.CoreV1().Nodes().Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Node %s: %v", name, err)
		}
	})
}

// podCIDRs waits until the controller-manager gave the Node its pod
// CIDRs (spec.podCIDRs) and returns them.
func (cp *controlPlane) podCIDRs(name string) []netip.Prefix {
	t := cp.t
	t.Helper()
	var got []netip.Prefix
	waitFor(t, "Node "+name+"'s spec.podCIDRs", cidrTimeout, 200*time.Millisecond, func() (bool, string) {
		if !cp.controllerManager.running() {
			t.Fatalf("kube-controller-manager exited: %v\n%s", cp.controllerManager.cmd.ProcessState, cp.controllerManager.log.tail(60))
		}
		n, err := cp.client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(n.Spec.PodCIDRs) == 0 {
			return false, "no pod CIDRs yet"
		}
		got = got[:0]
		for _, c := range n.Spec.PodCIDRs {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				t.Fatalf("Node %s: pod CIDR %q: %v", name, c, err)
			}
			got = append(got, p)
		}
		return true, ""
	})
	return got
}

// podnetUser is the Kubernetes user nri-podnet's -kube mode runs as in
// stage 2: bound to a ClusterRole with the rules the DaemonSet's service
// account gets (deploy/base/clusterrole.yaml, read from there).
const podnetUser = "nrinet-e2e-podnet"

// podnetKubeconfig returns a kubeconfig for nri-podnet on node, as
// podnetUser, creating the ClusterRole and its binding the first time.
func (cp *controlPlane) podnetKubeconfig(node string) string {
	t := cp.t
	t.Helper()
	ctx := t.Context()
	// The DaemonSet's own rules, from deploy/base.
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "base", "clusterrole.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var deployed rbacv1.ClusterRole
	if err := yaml.Unmarshal(b, &deployed); err != nil {
		t.Fatalf("deploy/base/clusterrole.yaml: %v", err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: podnetUser}, Rules: deployed.Rules}
	if _, err := cp.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ClusterRole %s: %v", role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: podnetUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: podnetUser},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: podnetUser}},
	}
	if _, err := cp.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ClusterRoleBinding %s: %v", binding.Name, err)
	}
	return cp.kubeconfig("podnet-"+node, podnetUser)
}
