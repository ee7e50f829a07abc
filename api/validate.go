package api

import "fmt"

// Helpers for the ValidateContainerAdjustment exchange, with the names and
// signatures of containerd/nri's pkg/api. See required.go for the
// required-plugins annotation and HasPlugin.

// AddPlugin records that the plugin with the given base name and index took
// part in adjusting the container.
func (v *ValidateContainerAdjustmentRequest) AddPlugin(name, index string) {
	v.Plugins = append(v.Plugins, &PluginInstance{Name: name, Index: index})
}

// AddResponse records the adjustment and updates of rpl as the ones to
// validate. A nil rpl clears both.
func (v *ValidateContainerAdjustmentRequest) AddResponse(rpl *CreateContainerResponse) {
	v.Adjust = rpl.GetAdjust()
	v.Update = rpl.GetUpdate()
}

// AddOwners records which plugin set which field; see OwningPlugins.
func (v *ValidateContainerAdjustmentRequest) AddOwners(owners *OwningPlugins) {
	v.Owners = owners
}

// GetPluginMap returns the plugins that took part in adjusting the
// container, each under its base name ("name") and, if it has an index,
// under its full name ("NN-name", see FullPluginName), so that a required
// plugin can be looked up in either form. Upstream maps the base name to a
// bare PluginInstance holding only the name; here both keys map to the
// request's own PluginInstance. If several plugins share a base name, the
// last one listed wins that key. A nil request gives a nil map.
func (v *ValidateContainerAdjustmentRequest) GetPluginMap() map[string]*PluginInstance {
	if v == nil {
		return nil
	}
	plugins := make(map[string]*PluginInstance, 2*len(v.Plugins))
	for _, p := range v.Plugins {
		if p == nil {
			continue
		}
		plugins[p.Name] = p
		if p.Index != "" {
			plugins[FullPluginName(p.Index, p.Name)] = p
		}
	}
	return plugins
}

// ValidationResult returns nil if the validator named plugin accepted the
// adjustment, and otherwise an error giving its reason.
func (v *ValidateContainerAdjustmentResponse) ValidationResult(plugin string) error {
	if !v.GetReject() {
		return nil
	}
	reason := v.GetReason()
	if reason == "" {
		reason = "unknown rejection reason"
	}
	return fmt.Errorf("validator %q rejected container adjustment, reason: %s", plugin, reason)
}
