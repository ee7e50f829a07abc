package api

// The Go code is generated from api.proto by internal/cmd/protogen; run
// `go generate ./api` from the repository root after editing the schema.
// The schema is registered with the protobuf runtime under the path
// pkg/api/api.proto, upstream containerd/nri's, with upstream's package
// nri.pkg.api.v1alpha1: lookups by path or by name cannot tell the two
// apart, which is what compat/nri (github.com/containerd/nri on nrinet)
// needs. Upstream's api and this one cannot be linked into one binary.

//go:generate go run ../internal/cmd/protogen -I pkg/api=. -param module=github.com/nrinet/nrinet -out .. pkg/api/api.proto

// The resource helpers of ContainerAdjustment and ContainerUpdate are
// generated from one table (resources.go).
//go:generate go run ../internal/cmd/resourcegen -out resources_generated.go
