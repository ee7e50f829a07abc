package api

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// NetworkNamespace is the LinuxNamespace type of a network namespace.
const NetworkNamespace = "network"

// NetNSPath returns the path of the pod's network namespace, taken from the
// "network" entry of its Linux namespaces, or "" if there is none. It is
// safe to call on a nil pod.
func (p *PodSandbox) NetNSPath() string {
	for _, ns := range p.GetLinux().GetNamespaces() {
		if ns.GetType() == NetworkNamespace {
			return ns.GetPath()
		}
	}
	return ""
}

// HasExtensionFields reports whether the pod carries a field of the pod
// network extension (port_mappings, dns_config), which only plugins that
// negotiated the extension may be sent. It is safe to call on a nil pod.
func (p *PodSandbox) HasExtensionFields() bool {
	return len(p.GetPortMappings()) > 0 || p.GetDnsConfig() != nil
}

// isExtensionField reports whether fd is a field of the pod network
// extension in PodSandbox (port_mappings, dns_config) or in
// RunPodSandboxRequest (runtime_owns_network).
func isExtensionField(fd protoreflect.FieldDescriptor) bool {
	switch fd.ContainingMessage().FullName() {
	case podSandboxName:
		return fd.Number() == podPortMappingsField || fd.Number() == podDNSConfigField
	case runPodSandboxRequestName:
		return fd.Number() == runtimeOwnsNetworkField
	}
	return false
}

// Field numbers of the extension's fields of PodSandbox and
// RunPodSandboxRequest.
const (
	podPortMappingsField    protowire.Number = 10001
	podDNSConfigField       protowire.Number = 10002
	runtimeOwnsNetworkField protowire.Number = 10001
)

// The full names of the messages with fields of the extension (constants:
// the descriptors are not yet initialized when package variables are).
const (
	podSandboxName           protoreflect.FullName = "nri.pkg.api.v1alpha1.PodSandbox"
	runPodSandboxRequestName protoreflect.FullName = "nri.pkg.api.v1alpha1.RunPodSandboxRequest"
)

// WithoutExtensionFields returns the pod as a plugin without the pod
// network extension must see it: p itself when it carries none of the
// extension's fields, otherwise a shallow copy without them (it shares
// p's maps, lists and nested messages, so neither may be modified while
// the other is used).
func (p *PodSandbox) WithoutExtensionFields() *PodSandbox {
	if !p.HasExtensionFields() {
		return p
	}
	return shallowCopy(p.ProtoReflect(), func(fd protoreflect.FieldDescriptor) bool { return !isExtensionField(fd) }).(*PodSandbox)
}

// ClassicView returns a request to a plugin as a plugin without the pod
// network extension must see it: without the extension's fields of its
// own (RunPodSandboxRequest.runtime_owns_network), and every pod among
// the message's own fields (PodSandbox fields and lists of them, as in
// every request and event that carries pods) without the extension's
// fields. It returns m itself when it carries none, otherwise a shallow
// copy; m is not modified.
func ClassicView(m VTMessage) VTMessage {
	r := m.ProtoReflect()
	if !r.IsValid() {
		return m
	}
	var out protoreflect.Message
	copied := func() protoreflect.Message {
		if out == nil {
			out = shallowCopy(r, func(protoreflect.FieldDescriptor) bool { return true }).ProtoReflect()
		}
		return out
	}
	set := func(fd protoreflect.FieldDescriptor, v protoreflect.Value) { copied().Set(fd, v) }
	fields := r.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if isExtensionField(fd) {
			if r.Has(fd) {
				copied().Clear(fd)
			}
			continue
		}
		if fd.IsMap() || fd.Message() == nil || fd.Message().FullName() != podSandboxName || !r.Has(fd) {
			continue
		}
		if !fd.IsList() {
			if pod := r.Get(fd).Message().Interface().(*PodSandbox); pod.HasExtensionFields() {
				set(fd, protoreflect.ValueOfMessage(pod.WithoutExtensionFields().ProtoReflect()))
			}
			continue
		}
		list := r.Get(fd).List()
		ext := false
		for j := range list.Len() {
			ext = ext || list.Get(j).Message().Interface().(*PodSandbox).HasExtensionFields()
		}
		if !ext {
			continue
		}
		nl := r.NewField(fd).List()
		for j := range list.Len() {
			pod := list.Get(j).Message().Interface().(*PodSandbox)
			nl.Append(protoreflect.ValueOfMessage(pod.WithoutExtensionFields().ProtoReflect()))
		}
		set(fd, protoreflect.ValueOfList(nl))
	}
	if out == nil {
		return m
	}
	return out.Interface().(VTMessage)
}

// shallowCopy returns a new message of m's type with the fields of m that
// keep selects, and m's unknown fields, sharing their values with m.
func shallowCopy(m protoreflect.Message, keep func(protoreflect.FieldDescriptor) bool) proto.Message {
	out := m.New()
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if keep(fd) {
			out.Set(fd, v)
		}
		return true
	})
	if u := m.GetUnknown(); len(u) > 0 {
		out.SetUnknown(u)
	}
	return out.Interface()
}
