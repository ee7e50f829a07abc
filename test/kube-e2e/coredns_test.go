package kubee2e

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// corednsReadyTimeout bounds how long CoreDNS takes from kubectl apply
// until the kube-dns Service answers on every node.
const corednsReadyTimeout = 2 * time.Minute

// corednsManifest is CoreDNS as kubeadm v1.37 deploys it (its
// ServiceAccount, RBAC, Corefile, two replicas spread over the nodes, the
// kube-dns Service), written here rather than copied, with the Service's
// IP family policy %[1]s and families %[2]s, its cluster IPs fixed (%[4]s,
// the first of %[5]s: the kubelets' clusterDNS, one per family of the
// cluster) and the image %[3]s.
//
// The Corefile serves cluster.local and the reverse zones from the
// Kubernetes API and forwards the rest to the node's resolver, which the
// nodes here cannot reach: names outside the cluster fail at once.
const corednsManifest = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: coredns
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:coredns
rules:
- apiGroups: [""]
  resources: ["endpoints", "services", "pods", "namespaces"]
  verbs: ["list", "watch"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:coredns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:coredns
subjects:
- kind: ServiceAccount
  name: coredns
  namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: coredns
  namespace: kube-system
data:
  Corefile: |
    .:53 {
        errors
        health {
           lameduck 5s
        }
        ready
        kubernetes cluster.local in-addr.arpa ip6.arpa {
           pods insecure
           fallthrough in-addr.arpa ip6.arpa
           ttl 30
        }
        prometheus :9153
        forward . /etc/resolv.conf {
           max_concurrent 1000
        }
        cache 30 {
           disable success cluster.local
           disable denial cluster.local
        }
        loop
        reload
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels:
    k8s-app: kube-dns
spec:
  replicas: 2
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
  selector:
    matchLabels:
      k8s-app: kube-dns
  template:
    metadata:
      labels:
        k8s-app: kube-dns
    spec:
      priorityClassName: system-cluster-critical
      serviceAccountName: coredns
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels:
                k8s-app: kube-dns
            topologyKey: kubernetes.io/hostname
      tolerations:
      - key: CriticalAddonsOnly
        operator: Exists
      nodeSelector:
        kubernetes.io/os: linux
      dnsPolicy: Default
      containers:
      - name: coredns
        image: %[3]s
        imagePullPolicy: IfNotPresent
        args: ["-conf", "/etc/coredns/Corefile"]
        resources:
          requests:
            cpu: 10m
            memory: 70Mi
          limits:
            memory: 170Mi
        volumeMounts:
        - name: config-volume
          mountPath: /etc/coredns
          readOnly: true
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        - {name: metrics, containerPort: 9153, protocol: TCP}
        livenessProbe:
          httpGet: {path: /health, port: 8080, scheme: HTTP}
          initialDelaySeconds: 60
          timeoutSeconds: 5
          failureThreshold: 5
        readinessProbe:
          httpGet: {path: /ready, port: 8181, scheme: HTTP}
        securityContext:
          allowPrivilegeEscalation: false
          capabilities:
            add: ["NET_BIND_SERVICE"]
            drop: ["ALL"]
          readOnlyRootFilesystem: true
      volumes:
      - name: config-volume
        configMap:
          name: coredns
          items:
          - key: Corefile
            path: Corefile
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels:
    k8s-app: kube-dns
    kubernetes.io/cluster-service: "true"
    kubernetes.io/name: CoreDNS
spec:
  selector:
    k8s-app: kube-dns
  ipFamilyPolicy: %[1]s
  ipFamilies: [%[2]s]
  clusterIP: %[4]s
  clusterIPs: [%[5]s]
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
  - {name: metrics, port: 9153, protocol: TCP}
`

// deployCoreDNS applies corednsManifest, waits until both replicas are
// ready, and then until the kube-dns Service resolves
// kubernetes.default.svc.cluster.local to the kubernetes Service's address
// (an A record, an AAAA one in an IPv6-only cluster) from every node's
// namespace, on each of its addresses: through kube-proxy's rules to the
// CoreDNS pods over the pod network.
func (c *cluster) deployCoreDNS() {
	t := c.t
	t.Helper()
	start := time.Now()
	family := c.cp.family()
	servers := family.kubeDNS()
	policy, families := "SingleStack", []string{familyOf(servers[0])}
	if len(servers) > 1 {
		policy, families = "RequireDualStack", []string{familyOf(servers[0]), familyOf(servers[1])}
	}
	manifest := filepath.Join(c.cp.dir, "coredns.yaml")
	writeFile(t, manifest, fmt.Sprintf(corednsManifest, policy, strings.Join(families, ", "), corednsImage,
		servers[0], strings.ReplaceAll(joinAddrs(servers), ",", ", ")))
	c.cp.kubectl("apply", "-f", manifest)
	waitFor(t, "CoreDNS's 2 replicas ready", corednsReadyTimeout, 250*time.Millisecond, func() (bool, string) {
		d, err := c.cp.client.AppsV1().Deployments("kube-system").Get(t.Context(), "coredns", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas == 2, fmt.Sprintf("%d of 2 ready", d.Status.ReadyReplicas)
	})
	want := family.kubernetesService()
	for _, n := range c.nodes {
		for _, server := range servers {
			waitFor(t, fmt.Sprintf("kube-dns on %s answering from %s", server, n.name), corednsReadyTimeout, 250*time.Millisecond, func() (bool, string) {
				got, err := n.lookup(server, "kubernetes.default.svc.cluster.local.", want.Is6())
				if err != nil {
					return false, err.Error()
				}
				return len(got) == 1 && got[0] == want, fmt.Sprintf("answer %v, want %v", got, want)
			})
		}
	}
	t.Logf("CoreDNS answering on %v from every node %v after kubectl apply", servers, time.Since(start).Round(time.Millisecond))
}

// lookup sends one DNS query for name's A records (AAAA with aaaa) over
// UDP to server from inside the node's namespace and returns the
// addresses answered.
func (n *kubeNode) lookup(server netip.Addr, name string, aaaa bool) ([]netip.Addr, error) {
	qtype := dnsmessage.TypeA
	if aaaa {
		qtype = dnsmessage.TypeAAAA
	}
	q := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: 0x6e72, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: qtype, Class: dnsmessage.ClassINET}},
	}
	packed, err := q.Pack()
	if err != nil {
		return nil, err
	}
	var conn net.Conn
	err = inNetNS(n.netnsPath, func() error {
		c, err := net.Dial("udp", netip.AddrPortFrom(server, 53).String())
		conn = c
		return err
	})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write(packed); err != nil {
		return nil, err
	}
	buf := make([]byte, 1500)
	k, err := conn.Read(buf)
	if err != nil {
		return nil, err
	}
	var m dnsmessage.Message
	if err := m.Unpack(buf[:k]); err != nil {
		return nil, err
	}
	if m.Header.ID != q.Header.ID || m.Header.RCode != dnsmessage.RCodeSuccess {
		return nil, fmt.Errorf("answer ID %#x, rcode %v", m.Header.ID, m.Header.RCode)
	}
	var out []netip.Addr
	for _, a := range m.Answers {
		switch r := a.Body.(type) {
		case *dnsmessage.AResource:
			out = append(out, netip.AddrFrom4(r.A))
		case *dnsmessage.AAAAResource:
			out = append(out, netip.AddrFrom16(r.AAAA))
		}
	}
	return out, nil
}
