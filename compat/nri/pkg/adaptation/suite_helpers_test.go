package adaptation

// Helpers upstream's own adaptation tests expect of the package (they are
// internal test helpers upstream): make upstream-suite runs those tests
// against this package with these.

// WithTestNRIVersion overrides the NRI version the runtime tells plugins.
func WithTestNRIVersion(v string) Option {
	return func(r *Adaptation) error {
		r.nriVersion = v
		return nil
	}
}

// PluginClosed returns a function reporting whether the plugin of full
// name "NN-name" is no longer connected.
func (r *Adaptation) PluginClosed(name string) func() bool {
	rt, err := r.runtime("PluginClosed")
	if err != nil {
		return func() bool { return true }
	}
	return func() bool { return !rt.PluginConnected(name) }
}
