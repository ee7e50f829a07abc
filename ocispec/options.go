package ocispec

import (
	"errors"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Option configures ApplyAdjustment, ApplyResources and ApplyUpdate; an
// option's error is theirs, before the spec is touched.
type Option func(*options) error

// options holds the configuration built from a list of Options.
type options struct {
	blockIO func(class string) (*rspec.LinuxBlockIO, error)
	rdt     func(class string) (*rspec.LinuxIntelRdt, error)
}

func newOptions(opts []Option) (*options, error) {
	o := &options{}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithBlockIOClassResolver sets the function that turns the block I/O class
// named by LinuxResources.blockio_class into the spec's
// Linux.Resources.BlockIO. Without it, applying a non-empty class fails
// with an error wrapping ErrNoResolver. The resolver is called before the
// spec is touched; the value it returns is copied into the spec, so it may
// return shared, cached settings. Returning nil settings is an error.
func WithBlockIOClassResolver(fn func(class string) (*rspec.LinuxBlockIO, error)) Option {
	return func(o *options) error {
		if fn == nil {
			return errors.New("ocispec: WithBlockIOClassResolver: nil function")
		}
		o.blockIO = fn
		return nil
	}
}

// WithRDTClassResolver sets the function that turns the RDT class named by
// LinuxResources.rdt_class into the spec's Linux.IntelRdt. Without it,
// applying a non-empty class fails with an error wrapping ErrNoResolver.
// The resolver is called before the spec is touched; the value it returns
// is copied into the spec. Returning nil settings is an error.
func WithRDTClassResolver(fn func(class string) (*rspec.LinuxIntelRdt, error)) Option {
	return func(o *options) error {
		if fn == nil {
			return errors.New("ocispec: WithRDTClassResolver: nil function")
		}
		o.rdt = fn
		return nil
	}
}

// resolveBlockIO resolves a present blockio_class. The empty class means
// "no block I/O settings" and needs no resolver; it yields nil.
func (o *options) resolveBlockIO(field, class string) (*rspec.LinuxBlockIO, error) {
	if class == "" {
		return nil, nil
	}
	if o.blockIO == nil {
		return nil, &fieldError{field: field, value: class, reason: "block I/O class given but no resolver configured (WithBlockIOClassResolver)", cause: ErrNoResolver}
	}
	b, err := o.blockIO(class)
	if err != nil {
		return nil, &fieldError{field: field, value: class, reason: "cannot resolve block I/O class", cause: err}
	}
	if b == nil {
		return nil, invalid(field, class, "block I/O class resolver returned no settings")
	}
	return cloneBlockIO(b), nil
}

// resolveRDT resolves a present rdt_class. The empty class means "no RDT
// settings" and needs no resolver; it yields nil.
func (o *options) resolveRDT(field, class string) (*rspec.LinuxIntelRdt, error) {
	if class == "" {
		return nil, nil
	}
	if o.rdt == nil {
		return nil, &fieldError{field: field, value: class, reason: "RDT class given but no resolver configured (WithRDTClassResolver)", cause: ErrNoResolver}
	}
	r, err := o.rdt(class)
	if err != nil {
		return nil, &fieldError{field: field, value: class, reason: "cannot resolve RDT class", cause: err}
	}
	if r == nil {
		return nil, invalid(field, class, "RDT class resolver returned no settings")
	}
	c := *r
	c.Schemata = slices.Clone(r.Schemata)
	return &c, nil
}

func cloneBlockIO(b *rspec.LinuxBlockIO) *rspec.LinuxBlockIO {
	c := &rspec.LinuxBlockIO{
		Weight:                  clonePtr(b.Weight),
		LeafWeight:              clonePtr(b.LeafWeight),
		ThrottleReadBpsDevice:   slices.Clone(b.ThrottleReadBpsDevice),
		ThrottleWriteBpsDevice:  slices.Clone(b.ThrottleWriteBpsDevice),
		ThrottleReadIOPSDevice:  slices.Clone(b.ThrottleReadIOPSDevice),
		ThrottleWriteIOPSDevice: slices.Clone(b.ThrottleWriteIOPSDevice),
	}
	if b.WeightDevice != nil {
		c.WeightDevice = make([]rspec.LinuxWeightDevice, len(b.WeightDevice))
		for i, d := range b.WeightDevice {
			d.Weight = clonePtr(d.Weight)
			d.LeafWeight = clonePtr(d.LeafWeight)
			c.WeightDevice[i] = d
		}
	}
	return c
}

// clonePtr returns a pointer to a copy of *p, or nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }
