// Command nri-cni is the CNI network plugin for NRI (package
// plugins/cni): it attaches pods to a CNI network and reports their
// networks to the runtime.
//
// Launched by the runtime from its plugin directory (as NN-cni), it gets
// its configuration in Configure from NN-cni.conf. Started by hand, it
// reads -config and dials -socket.
//
//	nri-cni [-config FILE] [-socket PATH] [-name cni] [-idx 10] [-verbose]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	cniplugin "github.com/nrinet/nrinet/plugins/cni"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "nri-cni:", err)
		os.Exit(1)
	}
}

// handler is the CNI plugin, told when the runtime shuts it down, so
// that the connection closing then is no error.
type handler struct {
	*cniplugin.Plugin
	shutdown atomic.Bool
}

func (h *handler) Shutdown(context.Context) { h.shutdown.Store(true) }

func run() error {
	configFile := flag.String("config", "", "configuration `file` (JSON); the runtime's configuration in Configure replaces it")
	socket := flag.String("socket", "", "runtime NRI socket `path` to dial (default "+api.DefaultSocketPath+"); unused when the runtime launched the plugin")
	name := flag.String("name", "cni", "plugin `name`, unless the runtime or the executable's NN-name file name gives one")
	idx := flag.String("idx", "10", "plugin `index`, unless the runtime or the executable's NN-name file name gives one")
	verbose := flag.Bool("verbose", false, "log debug messages")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	opts := []cniplugin.Option{cniplugin.WithLogger(logger)}
	if *configFile != "" {
		cfg, err := cniplugin.ConfigFromFile(*configFile)
		if err != nil {
			return err
		}
		opts = append(opts, cniplugin.WithConfig(*cfg))
	}
	p, err := cniplugin.New(ctx, opts...)
	if err != nil {
		return err
	}
	h := &handler{Plugin: p}

	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	_, _, nnErr := api.ParsePluginFileName(filepath.Base(os.Args[0]))
	named := nnErr == nil
	popts := []plugin.Option{plugin.WithLogger(logger)}
	if set["name"] || (os.Getenv(api.PluginNameEnv) == "" && !named) {
		popts = append(popts, plugin.WithPluginName(*name))
	}
	if set["idx"] || (os.Getenv(api.PluginIdxEnv) == "" && !named) {
		popts = append(popts, plugin.WithPluginIdx(*idx))
	}
	if *socket != "" {
		popts = append(popts, plugin.WithSocketPath(*socket))
	}
	s, err := plugin.New(h, popts...)
	if err != nil {
		return err
	}
	if err := s.Run(ctx); err != nil && !errors.Is(err, plugin.ErrStopped) && !h.shutdown.Load() {
		return err
	}
	return nil
}
