package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nrinet/nrinet/cmd/internal/pluginops"
	"github.com/nrinet/nrinet/plugins/podnet/netpol"
	"github.com/nrinet/nrinet/plugins/podnet/policies"
)

// explainer answers /explain: the running NetworkPolicy engine, once
// startCluster made one.
type explainer struct {
	policies atomic.Pointer[policies.Controller]
}

// parseFlow reads a flow as /explain's query and the explain command
// take it: two addresses and "PORT/PROTO" (tcp, udp or sctp; "PORT" alone
// is TCP).
func parseFlow(src, dst, port string) (netpol.Flow, error) {
	var f netpol.Flow
	var err error
	if f.Src, err = netip.ParseAddr(src); err != nil {
		return f, fmt.Errorf("source %q: %v", src, err)
	}
	if f.Dst, err = netip.ParseAddr(dst); err != nil {
		return f, fmt.Errorf("destination %q: %v", dst, err)
	}
	num, proto, _ := strings.Cut(port, "/")
	n, err := strconv.ParseUint(num, 10, 16)
	if err != nil || n == 0 {
		return f, fmt.Errorf("port %q: want PORT/PROTO, a port from 1 to 65535 and tcp, udp or sctp", port)
	}
	f.Port = uint16(n)
	switch strings.ToLower(proto) {
	case "", "tcp":
		f.Protocol = netpol.TCP
	case "udp":
		f.Protocol = netpol.UDP
	case "sctp":
		f.Protocol = netpol.SCTP
	default:
		return f, fmt.Errorf("port %q: protocol %q is none of tcp, udp, sctp", port, proto)
	}
	return f, nil
}

// ServeHTTP answers GET /explain?src=ADDR&dst=ADDR&port=PORT/PROTO with
// one line: "allowed: ..." or "denied: ..." (netpol.Explanation).
func (e *explainer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	q := r.URL.Query()
	f, err := parseFlow(q.Get("src"), q.Get("dst"), q.Get("port"))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintln(w, err)
		return
	}
	c := e.policies.Load()
	if c == nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "NetworkPolicies are not enforced by this nri-podnet (it runs without -kube, or with -network-policy=false)")
		return
	}
	ex, err := c.Explain(f)
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, err)
		return
	}
	fmt.Fprintln(w, ex)
}

// explainCommand is "nri-podnet explain [-address HOST:PORT] SRC DST
// PORT/PROTO": it asks the nri-podnet serving -health-address at address
// why the node's NetworkPolicies allow or deny a new connection, and
// prints the answer.
func explainCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nri-podnet explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	address := fs.String("address", "127.0.0.1:9465", "the `host:port` of the running nri-podnet's -health-address")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: nri-podnet explain [-address HOST:PORT] SRC DST PORT/PROTO

Asks the nri-podnet running on this node which NetworkPolicies allow or
deny a new connection from SRC to DST (e.g. 198.19.0.5 198.19.1.7 8080/tcp),
as its table decides the connection's first packet.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return pluginops.Usage(err)
	}
	if fs.NArg() != 3 {
		return pluginops.Usage(fmt.Errorf("explain: want SRC DST PORT/PROTO, got %q", fs.Args()))
	}
	if _, err := parseFlow(fs.Arg(0), fs.Arg(1), fs.Arg(2)); err != nil {
		return pluginops.Usage(fmt.Errorf("explain: %w", err))
	}
	if _, _, err := net.SplitHostPort(*address); err != nil {
		return pluginops.Usage(fmt.Errorf("explain: -address %q: %v", *address, err))
	}
	u := url.URL{Scheme: "http", Host: *address, Path: "/explain",
		RawQuery: url.Values{"src": {fs.Arg(0)}, "dst": {fs.Arg(1)}, "port": {fs.Arg(2)}}.Encode()}
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(u.String())
	if err != nil {
		return fmt.Errorf("explain: asking nri-podnet at %s: %w", *address, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return fmt.Errorf("explain: reading nri-podnet's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("explain: nri-podnet at %s: %s: %s", *address, resp.Status, strings.TrimSpace(string(body)))
	}
	_, err = stdout.Write(body)
	return err
}
