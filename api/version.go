package api

// Version is the containerd NRI protocol version this package implements.
// nrinet sends it as NRI_version in RegisterPluginRequest and
// ConfigureRequest, so that upstream peers, which use the field to infer
// what the other side supports, treat nrinet like NRI of that version.
const Version = "v0.12.5"
