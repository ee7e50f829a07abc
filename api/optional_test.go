package api_test

import (
	"os"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrinet/nrinet/api"
)

func TestOptionalConstructors(t *testing.T) {
	var (
		s   = "s"
		ss  = []string{"a", "b"}
		i   = -3
		i32 = int32(-4)
		u32 = uint32(5)
		i64 = int64(-6)
		u64 = uint64(7)
		b   = true
		fm  = os.FileMode(0o640)
	)
	tests := []struct {
		name string
		got  proto.Message
		want proto.Message // nil: the constructor must return a nil wrapper
	}{
		{"String value", api.String("s"), &api.OptionalString{Value: "s"}},
		{"String empty", api.String(""), &api.OptionalString{}},
		{"String pointer", api.String(&s), &api.OptionalString{Value: "s"}},
		{"String nil pointer", api.String((*string)(nil)), nil},
		{"String wrapper", api.String(&api.OptionalString{Value: "w"}), &api.OptionalString{Value: "w"}},
		{"String nil wrapper", api.String((*api.OptionalString)(nil)), nil},
		{"String wrong type", api.String(1), nil},
		{"String untyped nil", api.String(nil), nil},

		{"RepeatedString value", api.RepeatedString(ss), &api.OptionalRepeatedString{Value: []string{"a", "b"}}},
		{"RepeatedString empty", api.RepeatedString([]string{}), &api.OptionalRepeatedString{}},
		{"RepeatedString pointer", api.RepeatedString(&ss), &api.OptionalRepeatedString{Value: []string{"a", "b"}}},
		{"RepeatedString nil pointer", api.RepeatedString((*[]string)(nil)), nil},
		{"RepeatedString wrapper", api.RepeatedString(&api.OptionalRepeatedString{Value: ss}), &api.OptionalRepeatedString{Value: []string{"a", "b"}}},
		{"RepeatedString wrong type", api.RepeatedString("a"), nil},

		{"Int value", api.Int(-3), &api.OptionalInt{Value: -3}},
		{"Int pointer", api.Int(&i), &api.OptionalInt{Value: -3}},
		{"Int nil pointer", api.Int((*int)(nil)), nil},
		{"Int wrapper", api.Int(&api.OptionalInt{Value: 9}), &api.OptionalInt{Value: 9}},
		{"Int int64 rejected", api.Int(int64(1)), nil},

		{"Int32 value", api.Int32(int32(-4)), &api.OptionalInt32{Value: -4}},
		{"Int32 pointer", api.Int32(&i32), &api.OptionalInt32{Value: -4}},
		{"Int32 nil pointer", api.Int32((*int32)(nil)), nil},
		{"Int32 wrapper", api.Int32(&api.OptionalInt32{Value: 1}), &api.OptionalInt32{Value: 1}},
		{"Int32 int rejected", api.Int32(1), nil},

		{"UInt32 value", api.UInt32(uint32(5)), &api.OptionalUInt32{Value: 5}},
		{"UInt32 pointer", api.UInt32(&u32), &api.OptionalUInt32{Value: 5}},
		{"UInt32 nil pointer", api.UInt32((*uint32)(nil)), nil},
		{"UInt32 wrapper", api.UInt32(&api.OptionalUInt32{Value: 1}), &api.OptionalUInt32{Value: 1}},
		{"UInt32 int rejected", api.UInt32(1), nil},

		{"Int64 int", api.Int64(-1), &api.OptionalInt64{Value: -1}},
		{"Int64 uint", api.Int64(uint(2)), &api.OptionalInt64{Value: 2}},
		{"Int64 int64", api.Int64(int64(-6)), &api.OptionalInt64{Value: -6}},
		{"Int64 uint64", api.Int64(uint64(7)), &api.OptionalInt64{Value: 7}},
		{"Int64 *int64", api.Int64(&i64), &api.OptionalInt64{Value: -6}},
		{"Int64 *uint64", api.Int64(&u64), &api.OptionalInt64{Value: 7}},
		{"Int64 nil pointer", api.Int64((*int64)(nil)), nil},
		{"Int64 wrapper", api.Int64(&api.OptionalInt64{Value: 3}), &api.OptionalInt64{Value: 3}},
		{"Int64 int32 rejected", api.Int64(int32(1)), nil},

		{"UInt64 int", api.UInt64(1), &api.OptionalUInt64{Value: 1}},
		{"UInt64 uint", api.UInt64(uint(2)), &api.OptionalUInt64{Value: 2}},
		{"UInt64 int64", api.UInt64(int64(3)), &api.OptionalUInt64{Value: 3}},
		{"UInt64 uint64", api.UInt64(uint64(7)), &api.OptionalUInt64{Value: 7}},
		{"UInt64 *int64", api.UInt64(&i64), &api.OptionalUInt64{Value: uint64(i64)}},
		{"UInt64 *uint64", api.UInt64(&u64), &api.OptionalUInt64{Value: 7}},
		{"UInt64 nil pointer", api.UInt64((*uint64)(nil)), nil},
		{"UInt64 wrapper", api.UInt64(&api.OptionalUInt64{Value: 3}), &api.OptionalUInt64{Value: 3}},
		{"UInt64 string rejected", api.UInt64("1"), nil},

		{"Bool true", api.Bool(true), &api.OptionalBool{Value: true}},
		{"Bool false", api.Bool(false), &api.OptionalBool{}},
		{"Bool pointer", api.Bool(&b), &api.OptionalBool{Value: true}},
		{"Bool nil pointer", api.Bool((*bool)(nil)), nil},
		{"Bool wrapper", api.Bool(&api.OptionalBool{Value: true}), &api.OptionalBool{Value: true}},
		{"Bool wrong type", api.Bool(1), nil},

		{"FileMode value", api.FileMode(fm), &api.OptionalFileMode{Value: 0o640}},
		{"FileMode pointer", api.FileMode(&fm), &api.OptionalFileMode{Value: 0o640}},
		{"FileMode nil pointer", api.FileMode((*os.FileMode)(nil)), nil},
		{"FileMode uint32", api.FileMode(uint32(0o755)), &api.OptionalFileMode{Value: 0o755}},
		{"FileMode wrapper", api.FileMode(&api.OptionalFileMode{Value: 0o600}), &api.OptionalFileMode{Value: 0o600}},
		{"FileMode int rejected", api.FileMode(0o600), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isNil := tc.got.ProtoReflect().IsValid() == false
			if tc.want == nil {
				if !isNil {
					t.Fatalf("got %v, want a nil wrapper", tc.got)
				}
				return
			}
			if isNil {
				t.Fatalf("got a nil wrapper, want %v", tc.want)
			}
			checkWire(t, tc.got, tc.want)
		})
	}
}

// Constructors copy their argument: later changes to it do not leak in.
func TestOptionalCopies(t *testing.T) {
	ss := []string{"a"}
	w := &api.OptionalString{Value: "w"}
	r := api.RepeatedString(ss)
	c := api.String(w)
	ss[0], w.Value = "x", "x"
	if r.Value[0] != "a" || c.Value != "w" {
		t.Fatalf("constructor aliased its argument: %q %q", r.Value, c.Value)
	}
	g := r.Get()
	(*g)[0] = "y"
	if r.Value[0] != "a" {
		t.Fatalf("RepeatedString.Get aliased the value: %q", r.Value)
	}
}

func TestOptionalGet(t *testing.T) {
	if api.String(nil).Get() != nil || api.RepeatedString(nil).Get() != nil || api.Int(nil).Get() != nil ||
		api.Int32(nil).Get() != nil || api.UInt32(nil).Get() != nil || api.Int64(nil).Get() != nil ||
		api.UInt64(nil).Get() != nil || api.Bool(nil).Get() != nil || api.FileMode(nil).Get() != nil {
		t.Fatal("Get on a nil wrapper is not nil")
	}
	if v := api.String("s").Get(); *v != "s" {
		t.Errorf("String.Get = %q", *v)
	}
	if v := api.RepeatedString([]string{"a"}).Get(); len(*v) != 1 || (*v)[0] != "a" {
		t.Errorf("RepeatedString.Get = %q", *v)
	}
	if v := api.Int(-1).Get(); *v != -1 {
		t.Errorf("Int.Get = %d", *v)
	}
	if v := api.Int32(int32(-2)).Get(); *v != -2 {
		t.Errorf("Int32.Get = %d", *v)
	}
	if v := api.UInt32(uint32(3)).Get(); *v != 3 {
		t.Errorf("UInt32.Get = %d", *v)
	}
	if v := api.Int64(int64(-4)).Get(); *v != -4 {
		t.Errorf("Int64.Get = %d", *v)
	}
	if v := api.UInt64(uint64(5)).Get(); *v != 5 {
		t.Errorf("UInt64.Get = %d", *v)
	}
	if v := api.Bool(false).Get(); *v {
		t.Errorf("Bool.Get = %v", *v)
	}
	if v := api.FileMode(os.FileMode(0o700)).Get(); *v != 0o700 {
		t.Errorf("FileMode.Get = %v", *v)
	}
	// Get returns a copy.
	o := api.Int64(int64(1))
	*o.Get() = 2
	if o.Value != 1 {
		t.Errorf("Int64.Get aliased the value")
	}
}
