package api

// The Go code is generated from api.proto by internal/cmd/protogen; run
// `go generate ./api` from the repository root after editing the schema.
// The schema is registered with the protobuf runtime under the path
// github.com/nrinet/nrinet/api/api.proto rather than a bare "api.proto",
// to avoid path clashes with other generated packages in the same binary.

//go:generate go run ../internal/cmd/protogen -I github.com/nrinet/nrinet/api=. -param module=github.com/nrinet/nrinet -out .. github.com/nrinet/nrinet/api/api.proto
