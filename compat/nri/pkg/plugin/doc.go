// Package plugin holds upstream NRI's helpers for plugins: the NRI
// annotation domain and [GetEffectiveAnnotation], which looks up a pod
// annotation as it applies to one container. They are nrinet's
// (api.AnnotationDomain, api.RequiredPluginsAnnotation,
// api.EffectiveAnnotation) under upstream's names.
package plugin
