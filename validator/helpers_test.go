package validator_test

import (
	"testing"

	"github.com/nrinet/nrinet/api"
)

const ctrID = "ctr-id"

// owned describes the ownership record of the validated container.
type owned struct {
	simple   map[api.Field]string
	compound map[api.Field]map[string]string
}

// proto returns the record as the runtime sends it, for container ctrID.
func (o owned) proto() *api.OwningPlugins {
	fo := &api.FieldOwners{Simple: map[int32]string{}, Compound: map[int32]*api.CompoundFieldOwners{}}
	for f, p := range o.simple {
		fo.Simple[int32(f)] = p
	}
	for f, m := range o.compound {
		fo.Compound[int32(f)] = &api.CompoundFieldOwners{Owners: m}
	}
	return &api.OwningPlugins{Owners: map[string]*api.FieldOwners{ctrID: fo}}
}

// plugins builds plugin instances from "NN-name" strings.
func plugins(t *testing.T, full ...string) []*api.PluginInstance {
	t.Helper()
	var out []*api.PluginInstance
	for _, f := range full {
		idx, name, err := api.ParsePluginFileName(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &api.PluginInstance{Name: name, Index: idx})
	}
	return out
}

// errText returns err's text, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
