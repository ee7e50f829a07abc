package cni

import (
	"log/slog"
	"strings"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/version"
)

// defaultExec returns libcni's default way of running plugin executables,
// with their standard error logged to log (discarded if log is nil).
func defaultExec(log *slog.Logger) invoke.Exec {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &invoke.DefaultExec{
		RawExec:       &invoke.RawExec{Stderr: stderrLog{log}},
		PluginDecoder: version.PluginDecoder{},
	}
}

// stderrLog logs what CNI plugins write to their standard error. It is
// safe for concurrent use, as several plugins may run at once.
type stderrLog struct{ log *slog.Logger }

func (w stderrLog) Write(p []byte) (int, error) {
	if s := strings.TrimSpace(string(p)); s != "" {
		w.log.Warn("CNI plugin output", "stream", "stderr", "output", s)
	}
	return len(p), nil
}
