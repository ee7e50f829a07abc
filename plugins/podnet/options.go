package podnet

import "errors"

// Option configures a Plugin in [New].
type Option func(*options) error

type options struct {
	metrics *Metrics
}

// WithMetrics makes the plugin record its metrics in m (see [Metrics]);
// without it the plugin records none.
func WithMetrics(m *Metrics) Option {
	return func(o *options) error {
		if m == nil {
			return errors.New("podnet: WithMetrics: nil Metrics")
		}
		if o.metrics != nil {
			return errors.New("podnet: WithMetrics given twice")
		}
		o.metrics = m
		return nil
	}
}
