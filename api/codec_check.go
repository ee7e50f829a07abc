package api

import (
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// vtprotobuf's decoders accept input that protobuf-go refuses or reads
// otherwise:
//   - strings that are not UTF-8 (proto3 requires it);
//   - varints of ten bytes whose last byte overflows 64 bits, in known,
//     packed and unknown fields;
//   - field numbers above protowire.MaxValidNumber;
//   - a map entry's key or value with another wire type, which vtprotobuf
//     misreads and protobuf-go skips as an unknown field;
//   - an unknown field's tag in more bytes than needed, which vtprotobuf
//     keeps as sent and protobuf-go re-encodes in the fewest bytes.
//
// strictlyValid finds them in one pass over the encoded message, guided by
// a plan per message type that gives, per field number, the wire types
// the field may come with and whether it holds a string, a message (map
// entries are messages too) or packed scalars. It costs a fraction of
// decoding: no allocation, one slice index per field.

// maxCheckDepth bounds the nesting strictlyValid follows, like
// protobuf-go's default recursion limit; deeper input is left to
// protobuf-go.
const maxCheckDepth = 100

// wirePlan lists the fields of one message type, by field number: low for
// small numbers, high for the rest.
type wirePlan struct {
	low  []wireField
	high map[protowire.Number]wireField
}

// wireField is what a field of a wirePlan may hold. The zero value is an
// unknown field.
type wireField struct {
	wire   uint8     // bit 1<<t is set for each wire type t it may come with
	str    bool      // a string: UTF-8
	msg    *wirePlan // a message
	packed int       // packed scalars: 1 varints, 4 or 8 fixed-size
}

func (p *wirePlan) field(num protowire.Number) wireField {
	if int(num) < len(p.low) {
		return p.low[num]
	}
	return p.high[num]
}

// apiWirePlans holds the plans of every message of api.proto, built on
// first use and never changed afterwards.
var apiWirePlans = sync.OnceValue(func() map[protoreflect.FullName]*wirePlan {
	plans := map[protoreflect.FullName]*wirePlan{}
	var add func(protoreflect.MessageDescriptors)
	add = func(mds protoreflect.MessageDescriptors) {
		for i := range mds.Len() {
			buildWirePlan(mds.Get(i), plans)
			add(mds.Get(i).Messages())
		}
	}
	add(File_pkg_api_api_proto.Messages())
	return plans
})

// buildWirePlan returns the plan of md, building it and those of the
// messages it holds into plans if they are not there yet.
func buildWirePlan(md protoreflect.MessageDescriptor, plans map[protoreflect.FullName]*wirePlan) *wirePlan {
	if p, ok := plans[md.FullName()]; ok {
		return p
	}
	p := &wirePlan{}
	plans[md.FullName()] = p // before the fields: a message may hold itself
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		var f wireField
		switch k := fd.Kind(); k {
		case protoreflect.StringKind:
			f.wire, f.str = 1<<protowire.BytesType, true
		case protoreflect.MessageKind:
			f.wire, f.msg = 1<<protowire.BytesType, buildWirePlan(fd.Message(), plans)
		case protoreflect.BytesKind:
			f.wire = 1 << protowire.BytesType
		case protoreflect.GroupKind:
			f.wire = 1 << protowire.StartGroupType
		case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
			f.wire, f.packed = 1<<protowire.Fixed32Type, 4
		case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
			f.wire, f.packed = 1<<protowire.Fixed64Type, 8
		default: // varints
			f.wire, f.packed = 1<<protowire.VarintType, 1
		}
		if f.packed != 0 && fd.IsList() {
			f.wire |= 1 << protowire.BytesType
		} else {
			f.packed = 0
		}
		if n := int(fd.Number()); n < 256 {
			if n >= len(p.low) {
				p.low = append(p.low, make([]wireField, n+1-len(p.low))...)
			}
			p.low[n] = f
		} else {
			if p.high == nil {
				p.high = map[protowire.Number]wireField{}
			}
			p.high[fd.Number()] = f
		}
	}
	return p
}

// strictlyValid reports whether b, an encoding of a message of type md
// that vtprotobuf decoded, passes the checks protobuf-go makes and
// vtprotobuf does not. It also reports false for nesting deeper than
// maxCheckDepth.
func strictlyValid(b []byte, md protoreflect.MessageDescriptor) bool {
	p, ok := apiWirePlans()[md.FullName()]
	if !ok || md.ParentFile() != File_pkg_api_api_proto {
		p = buildWirePlan(md, map[protoreflect.FullName]*wirePlan{}) // not ours: plan it now
	}
	return p.valid(b, 0)
}

func (p *wirePlan) valid(b []byte, depth int) bool {
	if depth > maxCheckDepth {
		return false
	}
	for len(b) > 0 {
		// Tags and lengths of one byte, the common case, are decoded
		// here; protowire does the rest.
		var (
			num protowire.Number
			typ protowire.Type
			n   int
		)
		if c := b[0]; c < 0x80 && c >= 1<<3 { // field number 0 is invalid
			num, typ, n = protowire.Number(c>>3), protowire.Type(c&7), 1
		} else if num, typ, n = protowire.ConsumeTag(b); n < 0 || num > protowire.MaxValidNumber || n != protowire.SizeTag(num) {
			return false
		}
		b = b[n:]
		f := p.field(num)
		if f.wire != 0 && f.wire&(1<<typ) == 0 {
			return false
		}
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return false
			}
			b = b[n:]
			continue
		}
		var v []byte
		if len(b) > 0 && b[0] < 0x80 {
			l := int(b[0])
			if l >= len(b) {
				return false
			}
			v, b = b[1:1+l], b[1+l:]
		} else {
			if v, n = protowire.ConsumeBytes(b); n < 0 {
				return false
			}
			b = b[n:]
		}
		switch {
		case f.str:
			if !utf8.Valid(v) {
				return false
			}
		case f.msg != nil:
			if !f.msg.valid(v, depth+1) {
				return false
			}
		case f.packed == 1:
			for len(v) > 0 {
				if _, n = protowire.ConsumeVarint(v); n < 0 {
					return false
				}
				v = v[n:]
			}
		case f.packed > 1:
			if len(v)%f.packed != 0 {
				return false
			}
		}
	}
	return true
}
