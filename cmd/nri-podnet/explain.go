package main

import (
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

	"github.com/nrinet/nrinet/cmd/internal/cli"
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

// newExplainCommand is the command line of "nri-podnet explain
// [-address HOST:PORT] SRC DST PORT/PROTO", and its -address.
func newExplainCommand() (*cli.Command, *string) {
	c := cli.New("nri-podnet explain", `
Asks the nri-podnet running on this node which NetworkPolicies allow or
deny a new connection from SRC to DST (e.g. 198.19.0.5 198.19.1.7 8080/tcp),
as its table decides the connection's first packet.`,
		"[-address HOST:PORT] SRC DST PORT/PROTO")
	c.AllowArgs()
	address := c.Flags.String("address", "127.0.0.1:9465", "the `host:port` of the running nri-podnet's -http-address")
	return c, address
}

// explainCommand runs "nri-podnet explain" with args, the command line
// after "explain", on c and address (newExplainCommand): it asks the
// nri-podnet serving -http-address at address why the node's
// NetworkPolicies allow or deny a new connection, and prints the answer
// on stdout. Bad arguments are usage errors, and ask nothing.
func explainCommand(c *cli.Command, address *string, args []string, stdout io.Writer) error {
	if err := c.Parse(args); err != nil {
		return err
	}
	fs := c.Flags
	if fs.NArg() != 3 {
		return c.UsageError(fmt.Errorf("want SRC DST PORT/PROTO, got %q", fs.Args()))
	}
	if _, err := parseFlow(fs.Arg(0), fs.Arg(1), fs.Arg(2)); err != nil {
		return c.UsageError(err)
	}
	if _, _, err := net.SplitHostPort(*address); err != nil {
		return c.UsageError(fmt.Errorf("-address %q: %v", *address, err))
	}
	u := url.URL{Scheme: "http", Host: *address, Path: "/explain",
		RawQuery: url.Values{"src": {fs.Arg(0)}, "dst": {fs.Arg(1)}, "port": {fs.Arg(2)}}.Encode()}
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(u.String())
	if err != nil {
		return fmt.Errorf("asking nri-podnet at %s: %w", *address, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return fmt.Errorf("reading nri-podnet's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("nri-podnet at %s: %s: %s", *address, resp.Status, strings.TrimSpace(string(body)))
	}
	_, err = stdout.Write(body)
	return err
}
