module github.com/nrinet/nrinet/test

go 1.26.6

require (
	github.com/nrinet/nrinet v0.0.0
	github.com/nrinet/nrinet/ipam v0.0.0
)

replace (
	github.com/nrinet/nrinet => ..
	github.com/nrinet/nrinet/ipam => ../ipam
)

require (
	github.com/google/go-cmp v0.7.0
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	golang.org/x/mod v0.39.0
	golang.org/x/sys v0.48.0
	google.golang.org/grpc v1.82.1
	k8s.io/cri-api v0.37.2
)

require (
	github.com/containerd/log v0.1.0 // indirect
	github.com/containerd/ttrpc v1.2.9 // indirect
	github.com/opencontainers/runtime-spec v1.3.0 // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	go.etcd.io/bbolt v1.4.3 // indirect
	go.opentelemetry.io/otel/metric v1.44.0 // indirect
	go.opentelemetry.io/otel/trace v1.44.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260526163538-3dc84a4a5aaa // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
