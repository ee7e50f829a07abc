package api_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nrinet/nrinet/api"
)

func TestValidateRequestBuilders(t *testing.T) {
	adjust := &api.ContainerAdjustment{Args: []string{"sh"}}
	update := []*api.ContainerUpdate{{ContainerId: "c2"}}
	owners := &api.OwningPlugins{Owners: map[string]*api.FieldOwners{"c1": {}}}

	req := &api.ValidateContainerAdjustmentRequest{}
	req.AddPlugin("a", "10")
	req.AddPlugin("b", "20")
	req.AddResponse(&api.CreateContainerResponse{Adjust: adjust, Update: update})
	req.AddOwners(owners)

	want := &api.ValidateContainerAdjustmentRequest{
		Plugins: []*api.PluginInstance{{Name: "a", Index: "10"}, {Name: "b", Index: "20"}},
		Adjust:  adjust,
		Update:  update,
		Owners:  owners,
	}
	if diff := cmp.Diff(want, req, exportedOnly); diff != "" {
		t.Fatalf("request (-want +got):\n%s", diff)
	}
	if req.Adjust != adjust || req.Owners != owners {
		t.Errorf("AddResponse/AddOwners copied instead of referencing")
	}

	req.AddResponse(nil)
	if req.Adjust != nil || req.Update != nil {
		t.Errorf("AddResponse(nil) left %v, %v", req.Adjust, req.Update)
	}
}

func TestGetPluginMap(t *testing.T) {
	a := &api.PluginInstance{Name: "a", Index: "10"}
	b1 := &api.PluginInstance{Name: "b", Index: "20"}
	b2 := &api.PluginInstance{Name: "b", Index: "30"}
	bare := &api.PluginInstance{Name: "bare"}

	for _, tc := range []struct {
		name string
		req  *api.ValidateContainerAdjustmentRequest
		want map[string]*api.PluginInstance
	}{
		{"nil request", nil, nil},
		{"no plugins", &api.ValidateContainerAdjustmentRequest{}, map[string]*api.PluginInstance{}},
		{
			"by name and full name",
			&api.ValidateContainerAdjustmentRequest{Plugins: []*api.PluginInstance{a, nil, b1}},
			map[string]*api.PluginInstance{"a": a, "10-a": a, "b": b1, "20-b": b1},
		},
		{
			"shared name: last wins the base name",
			&api.ValidateContainerAdjustmentRequest{Plugins: []*api.PluginInstance{b1, b2}},
			map[string]*api.PluginInstance{"b": b2, "20-b": b1, "30-b": b2},
		},
		{
			"no index",
			&api.ValidateContainerAdjustmentRequest{Plugins: []*api.PluginInstance{bare}},
			map[string]*api.PluginInstance{"bare": bare},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.req.GetPluginMap()
			if (got == nil) != (tc.want == nil) || len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, p := range tc.want {
				if got[k] != p {
					t.Errorf("[%q] = %v, want %v", k, got[k], p)
				}
			}
		})
	}
}

func TestValidationResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		rsp  *api.ValidateContainerAdjustmentResponse
		want string // "" for no error
	}{
		{"nil", nil, ""},
		{"accepted", &api.ValidateContainerAdjustmentResponse{}, ""},
		{"accepted with reason", &api.ValidateContainerAdjustmentResponse{Reason: "fine"}, ""},
		{
			"rejected",
			&api.ValidateContainerAdjustmentResponse{Reject: true, Reason: "no hooks allowed"},
			`validator "10-v" rejected container adjustment, reason: no hooks allowed`,
		},
		{
			"rejected without reason",
			&api.ValidateContainerAdjustmentResponse{Reject: true},
			`validator "10-v" rejected container adjustment, reason: unknown rejection reason`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rsp.ValidationResult("10-v")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want nil", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}
