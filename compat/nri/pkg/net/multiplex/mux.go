package multiplex

import (
	"net"

	"github.com/nrinet/nrinet/mux"
)

// ConnID identifies a logical connection within a Mux.
type ConnID = mux.ConnID

// Connection ids.
const (
	// LowestConnID is the lowest usable ConnID; 0 is reserved.
	LowestConnID ConnID = 1
	// PluginServiceConn carries the ttrpc session in which the runtime
	// calls the plugin.
	PluginServiceConn = mux.PluginServiceConn
	// RuntimeServiceConn carries the ttrpc session in which the plugin
	// calls the runtime.
	RuntimeServiceConn = mux.RuntimeServiceConn
)

// Mux multiplexes logical connections over one trunk connection.
// Opening a connection is local: nothing is sent to the peer, which must
// open the same ConnID on its end.
type Mux interface {
	// Open returns the logical connection id.
	Open(ConnID) (net.Conn, error)
	// Close closes the trunk and every logical connection.
	Close() error
	// Dialer returns a net.Dial-like function that returns the logical
	// connection id, whatever its arguments.
	Dialer(ConnID) func(string, string) (net.Conn, error)
	// Listen returns a listener whose first Accept returns the logical
	// connection id; later Accepts block until the connection is closed.
	Listen(ConnID) (net.Listener, error)
	// Trunk returns the trunk connection.
	Trunk() net.Conn
	// Unblock starts reading from the trunk of a Mux made with
	// WithBlockedRead; otherwise it does nothing.
	Unblock()
}

// Option configures a Mux.
type Option func(*options)

type options struct {
	blocked bool
}

// WithBlockedRead makes the Mux read nothing from the trunk until
// Unblock, so that the connections can be opened first.
func WithBlockedRead() Option {
	return func(o *options) { o.blocked = true }
}

// WithReadQueueLength is accepted for upstream's sake and has no effect:
// nrinet's mux bounds unread data per connection in bytes.
func WithReadQueueLength(int) Option {
	return func(*options) {}
}

// Multiplex returns a Mux over trunk, which must not be nil. It starts
// reading from trunk at once, unless WithBlockedRead is given.
func Multiplex(trunk net.Conn, opts ...Option) Mux {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	m, err := mux.New(trunk)
	if err != nil {
		panic("multiplex: " + err.Error())
	}
	if !o.blocked {
		m.Start()
	}
	return muxer{m}
}

// muxer adapts nrinet's *mux.Mux to Mux.
type muxer struct{ *mux.Mux }

func (m muxer) Dialer(id ConnID) func(string, string) (net.Conn, error) {
	return func(string, string) (net.Conn, error) { return m.Open(id) }
}

func (m muxer) Unblock() { m.Start() }
