// Package builtin describes plugins that run inside the runtime process,
// as upstream NRI's pkg/adaptation/builtin does: a [BuiltinPlugin] is a
// name, an index and a set of [BuiltinHandlers], one optional function per
// event. The default validator (plugins/default-validator/builtin) is one.
//
// This package holds the types only; pkg/adaptation runs the plugins
// among the external ones.
package builtin
