package deploytest

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/nrinet/nrinet/internal/imagebuild"
)

// namespace is where everything of nrinet runs.
const namespace = "nrinet-system"

// podNetworkLabel is the Node label that opts a node in: the DaemonSet's
// pod runs only where it names the plugin (docs/deploy.md, "Which nodes").
const podNetworkLabel = "nrinet.io/pod-network"

// objects are the objects an overlay renders to, decoded.
type objects struct {
	namespaces          []corev1.Namespace
	serviceAccounts     []corev1.ServiceAccount
	configMaps          []corev1.ConfigMap
	clusterRoles        []rbacv1.ClusterRole
	clusterRoleBindings []rbacv1.ClusterRoleBinding
	daemonSets          []appsv1.DaemonSet
}

// render builds the kustomization in dir, as `kubectl apply -k` would,
// and decodes its objects (decode).
func render(t *testing.T, dir string) objects {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var docs [][]byte
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	return decode(t, dir, docs)
}

// decode decodes every YAML document strictly (an unknown field is an
// error) into its k8s.io/api type. A kind the test does not know is an
// error too: a new kind of object needs its checks.
func decode(t *testing.T, dir string, docs [][]byte) objects {
	t.Helper()
	var o objects
	for _, b := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(b, &tm); err != nil {
			t.Fatalf("%s: %v\n%s", dir, err, b)
		}
		var into any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Namespace":
			o.namespaces = append(o.namespaces, corev1.Namespace{})
			into = &o.namespaces[len(o.namespaces)-1]
		case "v1 ServiceAccount":
			o.serviceAccounts = append(o.serviceAccounts, corev1.ServiceAccount{})
			into = &o.serviceAccounts[len(o.serviceAccounts)-1]
		case "v1 ConfigMap":
			o.configMaps = append(o.configMaps, corev1.ConfigMap{})
			into = &o.configMaps[len(o.configMaps)-1]
		case "rbac.authorization.k8s.io/v1 ClusterRole":
			o.clusterRoles = append(o.clusterRoles, rbacv1.ClusterRole{})
			into = &o.clusterRoles[len(o.clusterRoles)-1]
		case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
			o.clusterRoleBindings = append(o.clusterRoleBindings, rbacv1.ClusterRoleBinding{})
			into = &o.clusterRoleBindings[len(o.clusterRoleBindings)-1]
		case "apps/v1 DaemonSet":
			o.daemonSets = append(o.daemonSets, appsv1.DaemonSet{})
			into = &o.daemonSets[len(o.daemonSets)-1]
		default:
			t.Fatalf("%s: %s %s: a kind this test does not check\n%s", dir, tm.APIVersion, tm.Kind, b)
		}
		if err := yaml.UnmarshalStrict(b, into); err != nil {
			t.Fatalf("%s: %s: %v\n%s", dir, tm.Kind, err, b)
		}
	}
	return o
}

// configMap returns the ConfigMap name, failing the test without it.
func (o objects) configMap(t *testing.T, name string) corev1.ConfigMap {
	t.Helper()
	for _, c := range o.configMaps {
		if c.Name == name && c.Namespace == namespace {
			return c
		}
	}
	t.Fatalf("no ConfigMap %s/%s", namespace, name)
	return corev1.ConfigMap{}
}

// mount is what a container sees of a volume.
type mount struct {
	hostPath    string // a hostPath volume's path
	configMap   string // a configMap volume's ConfigMap
	readOnly    bool
	propagation corev1.MountPropagationMode
}

// plugin is what each overlay must deploy.
type plugin struct {
	overlay   string
	component string // the DaemonSet, its container, its image (make image)
	tag       string // the image's tag: imagebuild.LatestTag unless set
	// repository is the image's repository: imagebuild.Repository
	// unless set (an overlay's images entry, newName).
	repository string
	// serviceAccount is the pod's; readsNodes says whether it is bound to
	// the ClusterRole reading nodes (and gets a token).
	serviceAccount string
	readsNodes     bool
	configMap      string
	healthPort     int32
	// privileged: nri-cni runs the node's CNI plugins, which write
	// sysctls (read-only in a container that is not privileged);
	// nri-podnet has exactly NET_ADMIN and SYS_ADMIN.
	privileged bool
	// flags are the plugin's command-line flags (the issue 13 spec's
	// names); kube is whether -kube is given.
	flags func(*flag.FlagSet)
	kube  bool
	// mounts are the container's volumes by mount path, exactly.
	mounts map[string]mount
	// podNetwork is the value of the opt-in label nrinet.io/pod-network
	// the pod's nodeSelector asks for: the network plugin the node's
	// runtime requires (podnet, cni).
	podNetwork string
	// checkConfig checks the configuration file against the mounts.
	checkConfig func(t *testing.T, data []byte)
}

// commonFlags are those of both plugins' executables.
func commonFlags(fs *flag.FlagSet) {
	fs.String("config", "", "")
	fs.String("socket", "", "")
	fs.String("name", "", "")
	fs.String("idx", "", "")
	fs.Bool("verbose", false, "")
	fs.String("http-address", "", "")
	fs.Bool("version", false, "")
}

// configJSON decodes a configuration file into a map. The plugin's own
// strict decoding is checked by the main module's package deploy, which
// imports the plugins; this module does not, so that it does not follow
// their dependencies.
func configJSON(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("configuration %s: %v", data, err)
	}
	return m
}

var plugins = []plugin{
	{
		overlay:        "../overlays/nri-podnet",
		component:      "nri-podnet",
		serviceAccount: "nri-podnet",
		readsNodes:     true,
		configMap:      "nri-podnet-config",
		healthPort:     9465,
		flags: func(fs *flag.FlagSet) {
			commonFlags(fs)
			fs.Bool("kube", false, "")
			fs.String("kubeconfig", "", "")
			fs.String("node-name", "", "")
			fs.String("cluster-cidr", "", "")
		},
		kube:       true,
		podNetwork: "podnet",
		mounts: map[string]mount{
			"/etc/nri-podnet":     {configMap: "nri-podnet-config", readOnly: true},
			"/var/run/nri":        {hostPath: "/var/run/nri"},
			"/var/run/netns":      {hostPath: "/var/run/netns", propagation: corev1.MountPropagationHostToContainer},
			"/var/lib/nri-podnet": {hostPath: "/var/lib/nri-podnet"},
		},
		checkConfig: func(t *testing.T, data []byte) {
			c := configJSON(t, data)
			if _, ok := c["subnets"]; ok {
				t.Errorf("configuration %s: subnets, which -kube takes from the Node", data)
			}
			if c["stateDir"] != "/var/lib/nri-podnet" {
				t.Errorf("configuration %s: stateDir is not the state volume /var/lib/nri-podnet", data)
			}
		},
	},
	{
		overlay:        "../overlays/nri-cni",
		component:      "nri-cni",
		serviceAccount: "nri-cni",
		configMap:      "nri-cni-config",
		healthPort:     9466,
		privileged:     true,
		flags:          commonFlags,
		podNetwork:     "cni",
		mounts: map[string]mount{
			"/etc/nri-cni":   {configMap: "nri-cni-config", readOnly: true},
			"/var/run/nri":   {hostPath: "/var/run/nri"},
			"/var/run/netns": {hostPath: "/var/run/netns", propagation: corev1.MountPropagationHostToContainer},
			"/etc/cni/net.d": {hostPath: "/etc/cni/net.d", readOnly: true},
			"/opt/cni/bin":   {hostPath: "/opt/cni/bin", readOnly: true},
			"/var/lib/cni":   {hostPath: "/var/lib/cni"},
		},
		checkConfig: func(t *testing.T, data []byte) {
			c := configJSON(t, data)
			want := map[string]any{"confDir": "/etc/cni/net.d", "binDirs": []any{"/opt/cni/bin"}, "cacheDir": "/var/lib/cni"}
			if !reflect.DeepEqual(c, want) {
				t.Errorf("configuration %s: the directories are not the mounted /etc/cni/net.d, /opt/cni/bin and /var/lib/cni", data)
			}
		},
	},
}

func TestOverlays(t *testing.T) {
	for _, p := range plugins {
		t.Run(p.component, func(t *testing.T) {
			o := render(t, p.overlay)
			checkNamespace(t, o)
			checkRBAC(t, o, p)
			if len(o.configMaps) != 1 || o.configMaps[0].Name != p.configMap {
				t.Errorf("ConfigMaps %v, want %s only", o.configMaps, p.configMap)
			}
			if len(o.daemonSets) != 1 {
				t.Fatalf("%d DaemonSets, want 1", len(o.daemonSets))
			}
			checkDaemonSet(t, o, p, o.daemonSets[0])
		})
	}
}

// TestExampleOverlay renders the example of docs/deploy.md, a cluster's
// overlay on top of deploy/overlays/nri-podnet, checks it as the overlay
// itself, and checks that its settings took: the image's version, the
// cluster CIDRs and the API server's address.
// The image's registry and version are one kustomize setting, the
// overlay's images entry.
func TestExampleOverlay(t *testing.T) {
	p := plugins[0]
	p.overlay, p.tag, p.repository = "testdata/my-cluster", "v0.1.0", "registry.example.com/nrinet"
	o := render(t, p.overlay)
	checkNamespace(t, o)
	checkRBAC(t, o, p)
	if len(o.daemonSets) != 1 {
		t.Fatalf("%d DaemonSets, want 1", len(o.daemonSets))
	}
	ds := o.daemonSets[0]
	checkDaemonSet(t, o, p, ds)
	if got := o.configMap(t, p.configMap).Data["cluster-cidr"]; got != "10.42.0.0/16,fd00:10:42::/56" {
		t.Errorf("cluster-cidr %q, want the example's", got)
	}
	env := map[string]string{}
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["KUBERNETES_SERVICE_HOST"] != "192.0.2.10" || env["KUBERNETES_SERVICE_PORT"] != "6443" {
		t.Errorf("env %v, want the example's API server address", env)
	}
}

// checkNamespace checks the one Namespace, and that every namespaced
// object is in it and every object is labelled as nrinet's.
func checkNamespace(t *testing.T, o objects) {
	t.Helper()
	if len(o.namespaces) != 1 || o.namespaces[0].Name != namespace {
		t.Fatalf("Namespaces %v, want %s only", o.namespaces, namespace)
	}
	if l := o.namespaces[0].Labels["pod-security.kubernetes.io/enforce"]; l != "privileged" {
		t.Errorf("Namespace %s: pod-security.kubernetes.io/enforce %q, want privileged (host network, hostPath, capabilities)", namespace, l)
	}
	type meta struct {
		kind, namespace, name string
		labels                map[string]string
	}
	var all []meta
	for _, x := range o.namespaces {
		all = append(all, meta{"Namespace", namespace, x.Name, x.Labels})
	}
	for _, x := range o.serviceAccounts {
		all = append(all, meta{"ServiceAccount", x.Namespace, x.Name, x.Labels})
	}
	for _, x := range o.configMaps {
		all = append(all, meta{"ConfigMap", x.Namespace, x.Name, x.Labels})
	}
	for _, x := range o.daemonSets {
		all = append(all, meta{"DaemonSet", x.Namespace, x.Name, x.Labels})
	}
	for _, x := range o.clusterRoles {
		all = append(all, meta{"ClusterRole", namespace, x.Name, x.Labels})
	}
	for _, x := range o.clusterRoleBindings {
		all = append(all, meta{"ClusterRoleBinding", namespace, x.Name, x.Labels})
	}
	for _, m := range all {
		if m.namespace != namespace {
			t.Errorf("%s %s is in namespace %q, want %s", m.kind, m.name, m.namespace, namespace)
		}
		if m.labels["app.kubernetes.io/part-of"] != "nrinet" {
			t.Errorf("%s %s is not labelled app.kubernetes.io/part-of=nrinet", m.kind, m.name)
		}
	}
}

// checkRBAC checks the service account and that the only permission
// granted is reading Node objects, to the plugins that need it.
func checkRBAC(t *testing.T, o objects, p plugin) {
	t.Helper()
	if len(o.serviceAccounts) != 1 || o.serviceAccounts[0].Name != p.serviceAccount {
		t.Fatalf("ServiceAccounts %v, want %s only", o.serviceAccounts, p.serviceAccount)
	}
	sa := o.serviceAccounts[0]
	if !p.readsNodes {
		if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
			t.Errorf("ServiceAccount %s: automountServiceAccountToken is not false, and the plugin reads nothing from Kubernetes", sa.Name)
		}
		if len(o.clusterRoles)+len(o.clusterRoleBindings) != 0 {
			t.Errorf("ClusterRoles %v and ClusterRoleBindings %v for a plugin that reads nothing from Kubernetes", o.clusterRoles, o.clusterRoleBindings)
		}
		return
	}
	if len(o.clusterRoles) != 1 || len(o.clusterRoleBindings) != 1 {
		t.Fatalf("%d ClusterRoles and %d ClusterRoleBindings, want one of each", len(o.clusterRoles), len(o.clusterRoleBindings))
	}
	role, binding := o.clusterRoles[0], o.clusterRoleBindings[0]
	// Read only: Nodes (routes, pod CIDRs), and what NetworkPolicies need.
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "namespaces", "pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"get", "list", "watch"}},
	}
	ok := len(role.Rules) == len(want) && role.AggregationRule == nil
	for i := range want {
		ok = ok && slices.Equal(role.Rules[i].APIGroups, want[i].APIGroups) &&
			slices.Equal(role.Rules[i].Resources, want[i].Resources) &&
			slices.Equal(role.Rules[i].Verbs, want[i].Verbs) &&
			len(role.Rules[i].ResourceNames)+len(role.Rules[i].NonResourceURLs) == 0
	}
	if !ok {
		t.Errorf("ClusterRole %s rules %+v, want only %+v", role.Name, role.Rules, want)
	}
	if binding.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}) {
		t.Errorf("ClusterRoleBinding %s refers to %+v, not ClusterRole %s", binding.Name, binding.RoleRef, role.Name)
	}
	wantSubject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: namespace}
	if !slices.Equal(binding.Subjects, []rbacv1.Subject{wantSubject}) {
		t.Errorf("ClusterRoleBinding %s subjects %+v, want only %+v", binding.Name, binding.Subjects, wantSubject)
	}
}

// checkDaemonSet checks the DaemonSet of plugin p.
func checkDaemonSet(t *testing.T, o objects, p plugin, ds appsv1.DaemonSet) {
	t.Helper()
	if ds.Name != p.component {
		t.Errorf("DaemonSet %s, want %s", ds.Name, p.component)
	}
	if ds.Spec.Selector == nil || len(ds.Spec.Selector.MatchLabels) == 0 || len(ds.Spec.Selector.MatchExpressions) != 0 {
		t.Fatalf("DaemonSet %s: selector %v, want matchLabels", ds.Name, ds.Spec.Selector)
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("DaemonSet %s: the selector's %s=%s does not select its own pods (%v)", ds.Name, k, v, ds.Spec.Template.Labels)
		}
	}
	if ds.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != p.component {
		t.Errorf("DaemonSet %s: selector %v, want app.kubernetes.io/name=%s", ds.Name, ds.Spec.Selector.MatchLabels, p.component)
	}
	u := ds.Spec.UpdateStrategy
	if u.Type != appsv1.RollingUpdateDaemonSetStrategyType || u.RollingUpdate == nil || u.RollingUpdate.MaxUnavailable == nil || u.RollingUpdate.MaxUnavailable.String() != "1" {
		t.Errorf("DaemonSet %s: update strategy %+v, want RollingUpdate with maxUnavailable 1", ds.Name, u)
	}

	pod := ds.Spec.Template.Spec
	if !pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Errorf("pod: hostNetwork %v hostPID %v hostIPC %v, want the host network only", pod.HostNetwork, pod.HostPID, pod.HostIPC)
	}
	if pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("pod: dnsPolicy %q, want %q", pod.DNSPolicy, corev1.DNSClusterFirstWithHostNet)
	}
	if pod.PriorityClassName != "system-node-critical" {
		t.Errorf("pod: priorityClassName %q, want system-node-critical", pod.PriorityClassName)
	}
	if !slices.Equal(pod.Tolerations, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}) {
		t.Errorf("pod: tolerations %+v, want one that tolerates every taint", pod.Tolerations)
	}
	// Every taint tolerated, but only on the Linux nodes opted in: a node
	// whose runtime is not switched yet gets no pod, which would exit 3
	// there and restart over and over.
	if want := map[string]string{"kubernetes.io/os": "linux", podNetworkLabel: p.podNetwork}; !maps.Equal(pod.NodeSelector, want) {
		t.Errorf("pod: nodeSelector %v, want %v", pod.NodeSelector, want)
	}
	if pod.ServiceAccountName != p.serviceAccount {
		t.Errorf("pod: serviceAccountName %q, want %q", pod.ServiceAccountName, p.serviceAccount)
	}
	if token := pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken; token != p.readsNodes {
		t.Errorf("pod: mounts a service account token: %v, want %v", token, p.readsNodes)
	}
	if pod.SecurityContext != nil && !reflect.DeepEqual(*pod.SecurityContext, corev1.PodSecurityContext{}) {
		t.Errorf("pod: securityContext %+v; the container's says it all", pod.SecurityContext)
	}
	if len(pod.InitContainers) != 0 || len(pod.Containers) != 1 {
		t.Fatalf("pod: %d init containers and %d containers, want one container", len(pod.InitContainers), len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Name != p.component {
		t.Errorf("container %s, want %s", c.Name, p.component)
	}
	tag := p.tag
	if tag == "" {
		tag = imagebuild.LatestTag
	}
	want := imagebuild.Ref(p.component, tag)
	if p.repository != "" {
		want = p.repository + "/" + p.component + ":" + tag
	}
	if c.Image != want || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("container %s: image %s pull policy %q, want %s (make image) and %q", c.Name, c.Image, c.ImagePullPolicy, want, corev1.PullIfNotPresent)
	}
	if len(c.Command) != 0 {
		t.Errorf("container %s: command %q replaces the image's entrypoint", c.Name, c.Command)
	}
	checkSecurity(t, c, p.privileged)
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("container %s: requests %v, want cpu and memory", c.Name, c.Resources.Requests)
	}

	// NODE_NAME is the node's name, from the downward API.
	var nodeName *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "NODE_NAME" {
			nodeName = &c.Env[i]
		}
	}
	if nodeName == nil || nodeName.ValueFrom == nil || nodeName.ValueFrom.FieldRef == nil || nodeName.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("container %s: NODE_NAME %+v, want spec.nodeName from the downward API", c.Name, nodeName)
	}

	mounts := checkMounts(t, pod, c, p)
	flags := parseArgs(t, o, c, p)
	healthPort := checkProbes(t, c, p)
	if want := ":" + strconv.Itoa(int(healthPort)); flags["http-address"] != want {
		t.Errorf("-http-address %q, want %q: the health port", flags["http-address"], want)
	}
	if flags["socket"] != "/var/run/nri/nri.sock" || !mounted(mounts, flags["socket"], "/var/run/nri") {
		t.Errorf("-socket %q, want /var/run/nri/nri.sock, in the /var/run/nri volume", flags["socket"])
	}
	if (flags["kube"] == "true") != p.kube {
		t.Errorf("-kube %s, want %v", flags["kube"], p.kube)
	}
	if p.kube {
		if flags["kubeconfig"] != "" {
			t.Errorf("-kubeconfig %q, want the in-cluster configuration", flags["kubeconfig"])
		}
		checkClusterCIDR(t, flags["cluster-cidr"])
	}
	// The configuration file is the ConfigMap's key, mounted where -config
	// says; the plugin accepts it.
	config := flags["config"]
	dir, file := path.Split(config)
	m, ok := mounts[path.Clean(dir)]
	if !ok || m.configMap != p.configMap {
		t.Fatalf("-config %q is not in the volume of ConfigMap %s", config, p.configMap)
	}
	data, ok := o.configMap(t, p.configMap).Data[file]
	if !ok {
		t.Fatalf("-config %q: ConfigMap %s has no key %s", config, p.configMap, file)
	}
	p.checkConfig(t, []byte(data))
}

// checkSecurity checks that the container is not privileged and has
// exactly the capabilities NET_ADMIN and SYS_ADMIN, or, if privileged says
// so, that it is privileged and names no capabilities (it has them all).
// Its root file system is read-only either way.
func checkSecurity(t *testing.T, c corev1.Container, privileged bool) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("container %s: no securityContext", c.Name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container %s: the root file system is writable", c.Name)
	}
	if privileged {
		if sc.Privileged == nil || !*sc.Privileged || sc.Capabilities != nil {
			t.Errorf("container %s: privileged %v, capabilities %+v; want privileged, no capabilities named", c.Name, sc.Privileged != nil && *sc.Privileged, sc.Capabilities)
		}
		return
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("container %s is privileged", c.Name)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container %s: capabilities %+v, want ALL dropped", c.Name, sc.Capabilities)
	} else if add := slices.Sorted(slices.Values(sc.Capabilities.Add)); !slices.Equal(add, []corev1.Capability{"NET_ADMIN", "SYS_ADMIN"}) {
		t.Errorf("container %s: adds capabilities %q, want exactly NET_ADMIN and SYS_ADMIN", c.Name, add)
	}
	// The API server refuses allowPrivilegeEscalation false with
	// SYS_ADMIN added.
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		t.Errorf("container %s: allowPrivilegeEscalation false with SYS_ADMIN", c.Name)
	}
	if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
		t.Errorf("container %s: procMount %q", c.Name, *sc.ProcMount)
	}
}

// checkMounts checks that the container mounts exactly p.mounts, and
// returns its mounts by path.
func checkMounts(t *testing.T, pod corev1.PodSpec, c corev1.Container, p plugin) map[string]mount {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	got := map[string]mount{}
	for _, vm := range c.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			t.Errorf("container %s mounts volume %s, which the pod does not have", c.Name, vm.Name)
			continue
		}
		delete(volumes, vm.Name)
		m := mount{readOnly: vm.ReadOnly}
		if vm.MountPropagation != nil {
			m.propagation = *vm.MountPropagation
		}
		switch {
		case v.HostPath != nil:
			m.hostPath = v.HostPath.Path
		case v.ConfigMap != nil:
			m.configMap = v.ConfigMap.Name
		default:
			t.Errorf("volume %s: neither a hostPath nor a configMap", v.Name)
		}
		if vm.SubPath != "" || vm.SubPathExpr != "" {
			t.Errorf("volume mount %s: a subPath, which does not see updates", vm.Name)
		}
		got[vm.MountPath] = m
	}
	for name := range volumes {
		t.Errorf("pod volume %s is not mounted", name)
	}
	for mp, want := range p.mounts {
		if got[mp] != want {
			t.Errorf("mount %s: %+v, want %+v", mp, got[mp], want)
		}
	}
	for mp, m := range got {
		if _, ok := p.mounts[mp]; !ok {
			t.Errorf("mount %s (%+v) is not one the plugin needs", mp, m)
		}
	}
	return got
}

// mounted says whether file lies under mount path dir of mounts.
func mounted(mounts map[string]mount, file, dir string) bool {
	_, ok := mounts[dir]
	return ok && strings.HasPrefix(file, dir+"/")
}

// varRef is a $(VAR) reference of a container's arguments.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// parseArgs expands the container's $(VAR) references with its
// environment, as the kubelet does (a ConfigMap key is looked up, a
// downward API field stands for itself), parses the arguments with the
// plugin's flags and returns every flag's value by name. An unknown flag,
// an argument that is not a flag, or an unresolved reference fails the
// test.
func parseArgs(t *testing.T, o objects, c corev1.Container, p plugin) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			if ref.Optional != nil && *ref.Optional {
				t.Errorf("env %s: optional, so a missing key starts the plugin without it", e.Name)
			}
			v, ok := o.configMap(t, ref.Name).Data[ref.Key]
			if !ok {
				t.Fatalf("env %s: ConfigMap %s has no key %s", e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = v
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = "<" + e.ValueFrom.FieldRef.FieldPath + ">"
		default:
			t.Errorf("env %s: a source this test does not know", e.Name)
		}
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			v, ok := env[name]
			if !ok {
				t.Errorf("argument %q: $(%s) is not in the container's environment", a, name)
			}
			return v
		})
	}
	fs := flag.NewFlagSet(p.component, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p.flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("container %s: arguments %q: %v", c.Name, args, err)
	}
	if fs.NArg() != 0 {
		t.Fatalf("container %s: arguments %q: %q are not flags", c.Name, args, fs.Args())
	}
	flags := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { flags[f.Name] = f.Value.String() })
	return flags
}

// checkProbes checks that the liveness probe gets /healthz and the
// readiness probe /readyz on the container's port "health", which is
// p.healthPort, and returns that port.
func checkProbes(t *testing.T, c corev1.Container, p plugin) int32 {
	t.Helper()
	var port int32
	for _, cp := range c.Ports {
		if cp.Name == "health" {
			port = cp.ContainerPort
			if cp.Protocol != corev1.ProtocolTCP || cp.HostPort != 0 && cp.HostPort != port {
				t.Errorf("port health: %+v, want TCP", cp)
			}
		}
	}
	if port != p.healthPort {
		t.Errorf("container %s: port health %d, want %d", c.Name, port, p.healthPort)
	}
	for _, pr := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{
		{"liveness", c.LivenessProbe, "/healthz"},
		{"readiness", c.ReadinessProbe, "/readyz"},
	} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			t.Errorf("container %s: %s probe %+v, want an HTTP GET of %s", c.Name, pr.kind, pr.probe, pr.path)
			continue
		}
		g := pr.probe.HTTPGet
		probePort := g.Port.IntValue()
		if g.Port.String() == "health" {
			probePort = int(port)
		}
		if g.Path != pr.path || probePort != int(p.healthPort) || g.Host != "" || (g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP) {
			t.Errorf("container %s: %s probe GET %s://%s:%s%s, want http on port %d %s", c.Name, pr.kind, g.Scheme, g.Host, g.Port.String(), g.Path, p.healthPort, pr.path)
		}
	}
	return port
}

// checkClusterCIDR checks -cluster-cidr: comma-separated prefixes, one of
// each family at least, none overlapping another.
func checkClusterCIDR(t *testing.T, v string) {
	t.Helper()
	var prefixes []netip.Prefix
	for s := range strings.SplitSeq(v, ",") {
		pfx, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil || pfx != pfx.Masked() {
			t.Errorf("-cluster-cidr %q: %q is not a prefix (%v)", v, s, err)
			continue
		}
		prefixes = append(prefixes, pfx)
	}
	var v4, v6 bool
	for i, a := range prefixes {
		v4, v6 = v4 || a.Addr().Is4(), v6 || a.Addr().Is6()
		for _, b := range prefixes[i+1:] {
			if a.Overlaps(b) {
				t.Errorf("-cluster-cidr %q: %s overlaps %s", v, a, b)
			}
		}
	}
	if !v4 || !v6 {
		t.Errorf("-cluster-cidr %q: want both families (dual-stack)", v)
	}
}

// TestKubectlKustomize renders every kustomization with the kustomize that
// kubectl embeds, which may be older than this module's (kubectl v1.32
// has kustomize v5.5.0), and checks that it gives the same objects. It
// runs the kubectl of NRINET_KUBE_BIN (hack/kube.sh), else the one on
// PATH, and is skipped without one.
func TestKubectlKustomize(t *testing.T) {
	kubectl := "kubectl"
	if dir := os.Getenv("NRINET_KUBE_BIN"); dir != "" {
		kubectl = filepath.Join(dir, "kubectl")
	}
	kubectl, err := exec.LookPath(kubectl)
	if err != nil {
		t.Skipf("no kubectl: %v", err)
	}
	version, _ := exec.Command(kubectl, "version", "--client").CombinedOutput()
	t.Logf("%s: %s", kubectl, bytes.ReplaceAll(bytes.TrimSpace(version), []byte("\n"), []byte("; ")))
	dirs := []string{"testdata/my-cluster"}
	for _, p := range plugins {
		dirs = append(dirs, p.overlay)
	}
	// The kustomizations the chart is compared with (chart_test.go).
	for _, c := range chartCases {
		if !slices.Contains(dirs, c.kustomization) {
			dirs = append(dirs, c.kustomization)
		}
	}
	for _, dir := range dirs {
		t.Run(path.Base(dir), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(kubectl, "kustomize", dir)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.Bytes())
			}
			got, want := decode(t, dir, splitYAML(stdout.String())), render(t, dir)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("kubectl kustomize %s differs from kustomize's library:\n%s", dir, stdout.Bytes())
			}
		})
	}
}
