package ocispec

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error reporting malformed input: an
// adjustment or resource field whose value cannot be applied to a spec.
// The error text names the field (by its protobuf name and position, e.g.
// "mounts[2].destination") and the offending value.
var ErrInvalid = errors.New("invalid input")

// ErrNoResolver is wrapped by the error returned when the input names a
// block I/O or RDT class but no resolver for that kind of class was given
// (see WithBlockIOClassResolver and WithRDTClassResolver).
var ErrNoResolver = errors.New("no class resolver")

// fieldError reports a bad value of one input field.
type fieldError struct {
	field  string // protobuf field path, e.g. "linux.devices[0].type"
	value  any    // the offending value
	reason string // what is wrong with it
	cause  error  // ErrInvalid, ErrNoResolver or a resolver's error
}

func (e *fieldError) Error() string {
	msg := fmt.Sprintf("ocispec: %s %s: %s", e.field, quote(e.value), e.reason)
	if e.cause != ErrInvalid && e.cause != ErrNoResolver {
		msg += ": " + e.cause.Error()
	}
	return msg
}

func (e *fieldError) Unwrap() error { return e.cause }

// invalid returns an ErrInvalid error for field having value.
func invalid(field string, value any, format string, args ...any) error {
	return &fieldError{field: field, value: value, reason: fmt.Sprintf(format, args...), cause: ErrInvalid}
}

// quote formats a value for an error message; strings are quoted so that
// empty values stay visible.
func quote(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}
