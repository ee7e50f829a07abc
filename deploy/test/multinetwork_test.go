package deploytest

import (
	"flag"
	"maps"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// TestMultinetworkOverlay renders deploy/overlays/nri-podnet-multinetwork
// (docs/multinetwork.md) and checks it as the nri-podnet overlay, plus:
// -multinetwork names a file of its ConfigMap's volume, the kubelet's
// plugin directories are mounted from the host, the DRA ClusterRole has
// exactly what the driver needs and is bound to the plugin's service
// account, and the DeviceClass selects the driver.
func TestMultinetworkOverlay(t *testing.T) {
	dir := "../overlays/nri-podnet-multinetwork"
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var docs [][]byte
	var classes []resourcev1.DeviceClass
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(b, &tm); err != nil {
			t.Fatal(err)
		}
		if tm.APIVersion+" "+tm.Kind != "resource.k8s.io/v1 DeviceClass" {
			docs = append(docs, b)
			continue
		}
		var dc resourcev1.DeviceClass
		if err := yaml.UnmarshalStrict(b, &dc); err != nil {
			t.Fatalf("DeviceClass: %v\n%s", err, b)
		}
		classes = append(classes, dc)
	}
	o := decode(t, dir, docs)

	p := plugins[0]
	p.overlay = dir
	p.flags = func(fs *flag.FlagSet) {
		plugins[0].flags(fs)
		fs.String("multinetwork", "", "")
	}
	p.mounts = maps.Clone(plugins[0].mounts)
	p.mounts["/etc/nri-podnet-multinetwork"] = mount{configMap: "nri-podnet-multinetwork", readOnly: true}
	p.mounts["/var/lib/kubelet/plugins"] = mount{hostPath: "/var/lib/kubelet/plugins"}
	p.mounts["/var/lib/kubelet/plugins_registry"] = mount{hostPath: "/var/lib/kubelet/plugins_registry"}
	if len(o.daemonSets) != 1 {
		t.Fatalf("%d DaemonSets, want 1", len(o.daemonSets))
	}
	ds := o.daemonSets[0]
	checkDaemonSet(t, o, p, ds)
	c := ds.Spec.Template.Spec.Containers[0]
	flags := parseArgs(t, o, c, p)
	mounts := checkMounts(t, ds.Spec.Template.Spec, c, p)
	if f := flags["multinetwork"]; !mounted(mounts, f, "/etc/nri-podnet-multinetwork") {
		t.Errorf("-multinetwork %q is not in the ConfigMap's volume", f)
	} else if _, ok := o.configMap(t, "nri-podnet-multinetwork").Data["multinetwork.json"]; !ok || f != "/etc/nri-podnet-multinetwork/multinetwork.json" {
		t.Errorf("-multinetwork %q: the ConfigMap has no such key", f)
	}

	var role *rbacv1.ClusterRole
	for i := range o.clusterRoles {
		if o.clusterRoles[i].Name == "nri-podnet-dra" {
			role = &o.clusterRoles[i]
		}
	}
	if role == nil {
		t.Fatal("no ClusterRole nri-podnet-dra")
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/status"}, Verbs: []string{"patch", "update"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/driver"}, ResourceNames: []string{"podnet.nrinet.io"}, Verbs: []string{"associated-node:patch", "associated-node:update"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	}
	if !slices.EqualFunc(role.Rules, want, func(a, b rbacv1.PolicyRule) bool {
		return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.ResourceNames, b.ResourceNames)
	}) {
		t.Errorf("ClusterRole nri-podnet-dra rules %+v, want %+v", role.Rules, want)
	}
	bound := false
	for _, b := range o.clusterRoleBindings {
		bound = bound || b.RoleRef.Name == "nri-podnet-dra" && slices.Equal(b.Subjects, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "nri-podnet", Namespace: namespace}})
	}
	if !bound {
		t.Errorf("ClusterRole nri-podnet-dra is not bound to the service account nri-podnet only: %+v", o.clusterRoleBindings)
	}

	if len(classes) != 1 || classes[0].Name != "podnet.nrinet.io" || len(classes[0].Spec.Selectors) != 1 ||
		classes[0].Spec.Selectors[0].CEL == nil || classes[0].Spec.Selectors[0].CEL.Expression != `device.driver == "podnet.nrinet.io"` {
		t.Errorf("DeviceClasses %+v, want podnet.nrinet.io selecting the driver", classes)
	}
}
