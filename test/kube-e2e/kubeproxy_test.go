package kubee2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// kubeProxyReadyTimeout bounds how long kube-proxy takes to program its
// first rules (its /healthz answers 200 once it has).
const kubeProxyReadyTimeout = 60 * time.Second

// kubeProxyHealthz is where the test asks kube-proxy's /healthz, in the
// node's namespace: kube-proxy serves it on every address of the node,
// port 10256 (its default; its metrics, 127.0.0.1:10249, are the default
// too, which the e2e spec "should check kube-proxy urls" reads).
const kubeProxyHealthz = "127.0.0.1:10256"

// startKubeProxy starts kube-proxy in the node's namespace in nftables mode
// (knftables drives the nft binary: Debian's nftables), as the user
// system:kube-proxy (bound to system:node-proxier by the apiserver's
// bootstrap RBAC), and waits until its /healthz says it has synced. It
// changes nothing outside the node's namespace: its tables live there,
// and every conntrack setting that would write a sysctl is left as it is
// (0): nf_conntrack_max is read-only outside the host's namespace and its
// hash size is host-wide.
func (n *kubeNode) startKubeProxy() {
	t := n.t
	t.Helper()
	bin := filepath.Join(env.kubeBin, "kube-proxy")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kube-proxy not in %s (hack/kube.sh builds it): %v", env.kubeBin, err)
	}
	if _, err := exec.LookPath("nft"); err != nil {
		if _, err := os.Stat("/usr/sbin/nft"); err != nil {
			t.Fatal("nft not found: kube-proxy's nftables mode needs it (Debian package nftables)")
		}
	}
	// The node's own connections to a Service (host-network pods, the
	// kubelet) need a route to its cluster IP before kube-proxy's output
	// chain rewrites the destination: a real node's default route does
	// that. Here, a route of the service ranges to the uplink: the node
	// has no default route, so that nothing of it leaves the test's
	// networks.
	for _, c := range n.cp.family().serviceCIDRs() {
		run(t, "ip", "-n", n.netns, ipFamily(c.Addr()), "route", "add", c.String(), "dev", "eth0")
	}
	kubeconfig := n.cp.kubeconfig("kube-proxy-"+n.name, "system:kube-proxy")
	start := time.Now()
	n.proxy = n.launch(n.name+"/kube-proxy", []string{"PATH=" + os.Getenv("PATH") + ":/usr/sbin:/sbin"}, bin,
		"--kubeconfig", kubeconfig,
		"--proxy-mode", "nftables",
		"--hostname-override", n.name,
		"--cluster-cidr", joinPrefixes(n.cp.family().clusterCIDRs()),
		"--conntrack-max-per-core", "0",
		"--conntrack-tcp-timeout-established", "0",
		"--conntrack-tcp-timeout-close-wait", "0",
		"--v", "2",
	)
	waitFor(t, "kube-proxy on "+n.name+" to sync", kubeProxyReadyTimeout, 250*time.Millisecond, func() (bool, string) {
		if !n.proxy.running() {
			t.Fatalf("kube-proxy exited: %v\n%s", n.proxy.cmd.ProcessState, n.proxy.log.tail(60))
		}
		status, err := n.httpGet(kubeProxyHealthz, "/healthz")
		if err != nil {
			return false, err.Error()
		}
		return strings.HasPrefix(status, "HTTP/1.0 200") || strings.HasPrefix(status, "HTTP/1.1 200"), status
	})
	t.Logf("kube-proxy on %s synced in %v", n.name, time.Since(start).Round(time.Millisecond))
}

// httpGet sends GET path over HTTP/1.0 to addr from inside the node's
// namespace and returns the status line. (net/http dials on goroutines of
// its own, on threads outside the namespace; a connection made on the
// namespace's thread stays in the namespace.)
func (n *kubeNode) httpGet(addr, path string) (string, error) {
	var conn net.Conn
	err := inNetNS(n.netnsPath, func() error {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		conn = c
		return err
	})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		return "", err
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(status), err
}
