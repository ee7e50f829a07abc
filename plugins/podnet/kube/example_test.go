package kube_test

import (
	"context"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nrinet/nrinet/plugins/podnet/kube"
	"github.com/nrinet/nrinet/plugins/podnet/masq"
)

// A node agent in a DaemonSet: wait for this node's pod CIDRs, keep the
// routes to the other nodes and the masquerade while it runs.
func ExampleWatcher() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	rc, err := rest.InClusterConfig()
	if err != nil {
		log.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		log.Fatal(err)
	}
	logger := slog.Default()
	cluster, _ := masq.ParseCIDRs("198.18.0.0/15,fd00:198:18::/48")
	m, err := masq.New()
	if err != nil {
		log.Fatal(err)
	}
	r, err := kube.NewRouter(kube.WithRouterLogger(logger)) // this namespace
	if err != nil {
		log.Fatal(err)
	}
	w, err := kube.NewWatcher(client, os.Getenv("NODE_NAME"),
		kube.WithLogger(logger),
		kube.WithRouter(r),
		kube.WithMasquerade(m, cluster),
		kube.WithForwarding(),
	)
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	podCIDRs, err := w.PodCIDRs(ctx) // blocks until the Node has them
	if err != nil {
		log.Fatal(err)
	}
	logger.Info("serving", "podCIDRs", podCIDRs) // e.g. the subnets of podnet.Config
	<-done                                       // Run returns when ctx is done
}
