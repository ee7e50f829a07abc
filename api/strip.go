package api

import (
	"reflect"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Strip methods normalize an adjustment or update so that two of them that
// mean the same can be compared field by field (with go-cmp, say): each
// empty list or map becomes nil, each nested strippable message (one of
// the types with a Strip method) is stripped in turn and dropped if that
// leaves it empty, and a message left with no field set is reduced to nil.
// Strip works in place and returns its receiver, or nil.
//
// Fields of other message types, such as the Optional* wrappers, count as
// set whenever they are non-nil; scalar fields when they are not zero.

func (a *ContainerAdjustment) Strip() *ContainerAdjustment           { return strip(a) }
func (c *LinuxContainerAdjustment) Strip() *LinuxContainerAdjustment { return strip(c) }
func (u *ContainerUpdate) Strip() *ContainerUpdate                   { return strip(u) }
func (c *LinuxContainerUpdate) Strip() *LinuxContainerUpdate         { return strip(c) }
func (h *Hooks) Strip() *Hooks                                       { return strip(h) }
func (r *LinuxResources) Strip() *LinuxResources                     { return strip(r) }
func (m *LinuxMemory) Strip() *LinuxMemory                           { return strip(m) }
func (c *LinuxCPU) Strip() *LinuxCPU                                 { return strip(c) }
func (p *LinuxPids) Strip() *LinuxPids                               { return strip(p) }
func (i *LinuxIOPriority) Strip() *LinuxIOPriority                   { return strip(i) }
func (s *LinuxScheduler) Strip() *LinuxScheduler                     { return strip(s) }
func (s *LinuxSeccomp) Strip() *LinuxSeccomp                         { return strip(s) }
func (m *LinuxMemoryPolicy) Strip() *LinuxMemoryPolicy               { return strip(m) }
func (r *LinuxRdt) Strip() *LinuxRdt                                 { return strip(r) }

// strippable reports whether m is of a type with a Strip method: strip
// recurses into these and only these.
func strippable(m protoreflect.Message) bool {
	_, ok := reflect.TypeOf(m.Interface()).MethodByName("Strip")
	return ok
}

// strip strips m in place and returns it, or the zero M (nil) if it is nil
// or was left empty.
func strip[M proto.Message](m M) M {
	if r := m.ProtoReflect(); r.IsValid() && stripMessage(r) {
		return m
	}
	var empty M
	return empty
}

// stripMessage strips m in place and reports whether any field is left.
func stripMessage(m protoreflect.Message) bool {
	set := false
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case !m.Has(fd):
			if fd.IsList() || fd.IsMap() {
				m.Clear(fd) // an empty but non-nil one becomes nil
			}
		case fd.IsList() || fd.IsMap() || fd.Message() == nil:
			set = true
		default: // a message field
			if sub := m.Get(fd).Message(); !strippable(sub) || stripMessage(sub) {
				set = true
			} else {
				m.Clear(fd)
			}
		}
	}
	return set
}
