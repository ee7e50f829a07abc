package merge

import (
	"fmt"
	"maps"
	"strings"

	"github.com/nrinet/nrinet/api"
)

// key identifies one ownable field of one container: a simple field
// (entry "") or one entry of a compound field.
type key struct {
	container string
	field     api.Field
	entry     string
}

func (k key) String() string {
	name := fieldName(k.field)
	if k.entry != "" {
		return fmt.Sprintf("%s %q of container %q", name, k.entry, k.container)
	}
	return fmt.Sprintf("%s of container %q", name, k.container)
}

// fieldName is a Field as people read it: "MemLimit", "Env", ...
func fieldName(f api.Field) string { return strings.TrimPrefix(f.String(), "Field_") }

// Owners records which plugin set which field of which container during
// one request. An owner "-name" means plugin name removed the field. The
// zero value is not usable; call [NewOwners].
type Owners struct {
	m      map[key]string
	parent *Owners // set for a transaction, see begin
}

// NewOwners returns an empty ownership record.
func NewOwners() *Owners { return &Owners{m: make(map[key]string)} }

// owner returns the recorded owner of k.
func (o *Owners) owner(k key) (string, bool) {
	if v, ok := o.m[k]; ok {
		return v, true
	}
	if o.parent != nil {
		return o.parent.owner(k)
	}
	return "", false
}

// Owner returns the plugin that set (or, as "-name", removed) field f of a
// container; entry selects the entry of a compound field.
func (o *Owners) Owner(container string, f api.Field, entry string) (string, bool) {
	return o.owner(key{container, f, entry})
}

// claim makes plugin the owner of k. It fails if another plugin set k, or
// removed it. A plugin may always claim what it set or removed itself.
func (o *Owners) claim(plugin string, k key) error {
	if prev, ok := o.owner(k); ok {
		other := strings.TrimPrefix(prev, "-")
		if other != plugin {
			return &ConflictError{Field: k.String(), Plugin: plugin, Owner: other}
		}
	}
	o.m[k] = plugin
	return nil
}

// clear records that plugin removed k: only plugin may set it afterwards.
func (o *Owners) clear(plugin string, k key) { o.m[k] = "-" + plugin }

// accumulate adds plugin to the comma-separated owners of k, for fields
// that never conflict (OCI hooks).
func (o *Owners) accumulate(plugin string, k key) {
	prev, _ := o.owner(k)
	for _, p := range strings.Split(prev, ",") {
		if p == plugin {
			return
		}
	}
	if prev != "" {
		plugin = prev + "," + plugin
	}
	o.m[k] = plugin
}

// begin starts a transaction: claims go to the returned record and reach
// o only through commit.
func (o *Owners) begin() *Owners { return &Owners{m: make(map[key]string), parent: o} }

// commit records the claims of transaction t in its parent.
func (t *Owners) commit() { maps.Copy(t.parent.m, t.m) }

// Proto returns the record in its wire form, as validators receive it:
// simple fields by Field number, compound fields by Field and entry.
func (o *Owners) Proto() *api.OwningPlugins {
	out := &api.OwningPlugins{Owners: map[string]*api.FieldOwners{}}
	for k, plugin := range o.m {
		fo := out.Owners[k.container]
		if fo == nil {
			fo = &api.FieldOwners{Simple: map[int32]string{}, Compound: map[int32]*api.CompoundFieldOwners{}}
			out.Owners[k.container] = fo
		}
		if !isCompound(k.field) {
			fo.Simple[int32(k.field)] = plugin
			continue
		}
		c := fo.Compound[int32(k.field)]
		if c == nil {
			c = &api.CompoundFieldOwners{Owners: map[string]string{}}
			fo.Compound[int32(k.field)] = c
		}
		c.Owners[k.entry] = plugin
	}
	return out
}

// isCompound reports whether f is owned per entry.
func isCompound(f api.Field) bool {
	switch f {
	case api.Field_Annotations, api.Field_Mounts, api.Field_Devices, api.Field_CdiDevices,
		api.Field_Env, api.Field_HugepageLimits, api.Field_CgroupsUnified, api.Field_Rlimits,
		api.Field_Namespace, api.Field_Sysctl, api.Field_LinuxNetDevices:
		return true
	}
	return false
}
