package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nrinet/nrinet/api"
)

// preinstalled is an executable found in the plugin directory.
type preinstalled struct {
	path, idx, name string
	config          string
}

// discover lists the pre-installed plugins: executables named NN-name, in
// lexical order, each with its configuration from NN-name.conf or
// name.conf. A missing directory means none. A badly named executable is
// logged and skipped (upstream fails the whole start), and so, as an
// error, is a WASM plugin (NN-name.wasm), which nrinet does not run.
func (r *Runtime) discover() ([]preinstalled, error) {
	dir := r.cfg.pluginPath
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("runtime: reading plugin directory: %w", err)
	}
	var out []preinstalled
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), ".wasm") {
			r.log.Error("WASM plugins are not supported; skipping the plugin", "path", path)
			continue
		}
		fi, err := os.Stat(path)
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		idx, name, err := api.ParsePluginFileName(e.Name())
		if err != nil {
			r.log.Warn("skipping badly named executable in plugin directory", "path", path, "error", err)
			continue
		}
		cfg, err := r.pluginConfig(idx, name)
		if err != nil {
			r.log.Warn("skipping plugin whose configuration cannot be read", "plugin", api.FullPluginName(idx, name), "error", err)
			continue
		}
		out = append(out, preinstalled{path: path, idx: idx, name: name, config: cfg})
	}
	return out, nil
}

// pluginConfig reads NN-name.conf, else name.conf, from the configuration
// directory; neither existing means an empty configuration.
func (r *Runtime) pluginConfig(idx, name string) (string, error) {
	if r.cfg.pluginConfigPath == "" {
		return "", nil
	}
	for _, f := range []string{api.FullPluginName(idx, name) + ".conf", name + ".conf"} {
		b, err := os.ReadFile(filepath.Join(r.cfg.pluginConfigPath, f))
		if err == nil {
			return string(b), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "", nil
}

// launch starts a pre-installed plugin with one end of a socket pair as
// fd 3 and an environment of exactly NRI_PLUGIN_NAME, NRI_PLUGIN_IDX and
// NRI_PLUGIN_SOCKET=3. Its standard output and error are logged.
// restarts counts the earlier incarnations.
func (r *Runtime) launch(pi preinstalled, restarts int) (*plugin, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	local := os.NewFile(uintptr(fds[0]), "nri-plugin-local")
	peer := os.NewFile(uintptr(fds[1]), "nri-plugin-peer")
	defer peer.Close()
	conn, err := net.FileConn(local)
	local.Close()
	if err != nil {
		return nil, err
	}
	full := api.FullPluginName(pi.idx, pi.name)
	log := r.log.With("plugin", full)
	cmd := exec.Command(pi.path)
	cmd.Env = []string{
		api.PluginNameEnv + "=" + pi.name,
		api.PluginIdxEnv + "=" + pi.idx,
		api.PluginSocketEnv + "=3",
	}
	cmd.ExtraFiles = []*os.File{peer}
	stdout, stderr := r.logWriter(log, "stdout"), r.logWriter(log, "stderr")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A grandchild that inherited the output pipes must not keep Wait, and
	// with it Stop, waiting after the plugin itself exited.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		conn.Close()
		stdout.Close()
		stderr.Close()
		return nil, err
	}
	p, err := r.newPlugin(conn, kindLaunched, pi.idx, pi.name)
	if err != nil {
		conn.Close()
		cmd.Process.Kill()
		cmd.Wait()
		stdout.Close()
		stderr.Close()
		return nil, err
	}
	p.cmd, p.config, p.pid, p.restarts = cmd, pi.config, cmd.Process.Pid, restarts
	if !r.track() { // stopping
		cmd.Process.Kill()
		cmd.Wait()
		stdout.Close()
		stderr.Close()
		close(p.exited)
		p.close(ErrClosed)
		return nil, ErrClosed
	}
	go func() {
		defer r.wg.Done()
		err := cmd.Wait()
		stdout.Close()
		stderr.Close()
		close(p.exited)
		if !p.isClosed() {
			p.close(fmt.Errorf("plugin process exited: %v", exitReason(err)))
		} else {
			log.Debug("plugin process exited", "status", exitReason(err))
		}
	}()
	if err := r.admit(p); err != nil {
		p.close(err)
		p.kill() // close spares the process on ErrClosed
		return nil, err
	}
	p.start()
	log.Info("launched plugin", "path", pi.path, "pid", p.pid)
	return p, nil
}

func exitReason(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// logWriter returns a writer that logs each line written to it, on a
// goroutine Stop waits for (it ends when the writer is closed).
func (r *Runtime) logWriter(log *slog.Logger, stream string) io.WriteCloser {
	pr, pw := io.Pipe()
	if !r.track() {
		pr.Close() // stopping: writes fail, and nothing is logged
		return pw
	}
	go func() {
		defer r.wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 4096), 64<<10)
		for sc.Scan() {
			log.Info("plugin output", "stream", stream, "line", sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	return pw
}
