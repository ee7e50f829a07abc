package api

import (
	"os"
	"slices"
)

// This file holds constructors for the Optional* wrapper messages. A nil
// wrapper means "not set, leave alone"; a non-nil one carries a value, even
// a zero one. The constructors take an untyped argument, like the ones in
// containerd/nri's pkg/api, so that plugin code ports unchanged: each
// accepts the plain value, a pointer to it (nil giving a nil wrapper) or a
// wrapper of its own type (copied), and returns nil for any other type.

// String returns an OptionalString for a string, *string or *OptionalString.
func String(v any) *OptionalString {
	switch x := v.(type) {
	case string:
		return &OptionalString{Value: x}
	case *string:
		if x != nil {
			return &OptionalString{Value: *x}
		}
	case *OptionalString:
		if x != nil {
			return &OptionalString{Value: x.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalString) Get() *string {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// RepeatedString returns an OptionalRepeatedString holding a copy of a []string, *[]string or *OptionalRepeatedString.
func RepeatedString(v any) *OptionalRepeatedString {
	switch x := v.(type) {
	case []string:
		return &OptionalRepeatedString{Value: slices.Clone(x)}
	case *[]string:
		if x != nil {
			return &OptionalRepeatedString{Value: slices.Clone(*x)}
		}
	case *OptionalRepeatedString:
		if x != nil {
			return &OptionalRepeatedString{Value: slices.Clone(x.Value)}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalRepeatedString) Get() *[]string {
	if o == nil {
		return nil
	}
	v := slices.Clone(o.Value)
	return &v
}

// Int returns an OptionalInt for an int, *int or *OptionalInt.
func Int(v any) *OptionalInt {
	switch x := v.(type) {
	case int:
		return &OptionalInt{Value: int64(x)}
	case *int:
		if x != nil {
			return &OptionalInt{Value: int64(*x)}
		}
	case *OptionalInt:
		if x != nil {
			return &OptionalInt{Value: x.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value as an int, or nil if o is unset.
func (o *OptionalInt) Get() *int {
	if o == nil {
		return nil
	}
	v := int(o.Value)
	return &v
}

// Int32 returns an OptionalInt32 for an int32, *int32 or *OptionalInt32.
func Int32(v any) *OptionalInt32 {
	switch x := v.(type) {
	case int32:
		return &OptionalInt32{Value: x}
	case *int32:
		if x != nil {
			return &OptionalInt32{Value: *x}
		}
	case *OptionalInt32:
		if x != nil {
			return &OptionalInt32{Value: x.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalInt32) Get() *int32 {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// UInt32 returns an OptionalUInt32 for a uint32, *uint32 or *OptionalUInt32.
func UInt32(v any) *OptionalUInt32 {
	switch x := v.(type) {
	case uint32:
		return &OptionalUInt32{Value: x}
	case *uint32:
		if x != nil {
			return &OptionalUInt32{Value: *x}
		}
	case *OptionalUInt32:
		if x != nil {
			return &OptionalUInt32{Value: x.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalUInt32) Get() *uint32 {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// Int64 returns an OptionalInt64 for an int, uint, int64, uint64, *int64, *uint64 or *OptionalInt64 (unsigned values wrap).
func Int64(v any) *OptionalInt64 {
	switch x := v.(type) {
	case int:
		return &OptionalInt64{Value: int64(x)}
	case uint:
		return &OptionalInt64{Value: int64(x)}
	case int64:
		return &OptionalInt64{Value: x}
	case uint64:
		return &OptionalInt64{Value: int64(x)}
	case *int64:
		if x != nil {
			return &OptionalInt64{Value: *x}
		}
	case *uint64:
		if x != nil {
			return &OptionalInt64{Value: int64(*x)}
		}
	case *OptionalInt64:
		if x != nil {
			return &OptionalInt64{Value: x.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalInt64) Get() *int64 {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// UInt64 returns an OptionalUInt64 for an int, uint, int64, uint64, *int64, *uint64 or *OptionalUInt64 (signed values wrap).
func UInt64(v any) *OptionalUInt64 {
	switch x := v.(type) {
	case int:
		return &OptionalUInt64{Value: uint64(x)}
	case uint:
		return &OptionalUInt64{Value: uint64(x)}
	case int64:
		return &OptionalUInt64{Value: uint64(x)}
	case uint64:
		return &OptionalUInt64{Value: x}
	case *int64:
		if x != nil {
			return &OptionalUInt64{Value: uint64(*x)}
		}
	case *uint64:
		if x != nil {
			return &OptionalUInt64{Value: *x}
		}
	case *OptionalUInt64:
		if x != nil {
			return &OptionalUInt64{Value: x.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalUInt64) Get() *uint64 {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// Bool returns an OptionalBool for a bool, *bool or *OptionalBool.
func Bool(v any) *OptionalBool {
	switch x := v.(type) {
	case bool:
		return &OptionalBool{Value: x}
	case *bool:
		if x != nil {
			return &OptionalBool{Value: *x}
		}
	case *OptionalBool:
		if x != nil {
			return &OptionalBool{Value: x.Value}
		}
	}
	return nil
}

// Get returns a pointer to a copy of the value, or nil if o is unset.
func (o *OptionalBool) Get() *bool {
	if o == nil {
		return nil
	}
	v := o.Value
	return &v
}

// FileMode returns an OptionalFileMode for an os.FileMode, *os.FileMode, uint32 or *OptionalFileMode.
func FileMode(v any) *OptionalFileMode {
	switch x := v.(type) {
	case os.FileMode:
		return &OptionalFileMode{Value: uint32(x)}
	case *os.FileMode:
		if x != nil {
			return &OptionalFileMode{Value: uint32(*x)}
		}
	case uint32:
		return &OptionalFileMode{Value: x}
	case *OptionalFileMode:
		if x != nil {
			return &OptionalFileMode{Value: x.Value}
		}
	}
	return nil
}

// Get returns a pointer to the value as an os.FileMode, or nil if o is unset.
func (o *OptionalFileMode) Get() *os.FileMode {
	if o == nil {
		return nil
	}
	v := os.FileMode(o.Value)
	return &v
}
