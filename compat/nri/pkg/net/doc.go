// Package net holds upstream NRI's socket helpers: [NewFdConn] makes a
// net.Conn of an inherited socket (a runtime-launched plugin's
// NRI_PLUGIN_SOCKET), [NewConnListener] serves one existing connection as
// a net.Listener, and [SocketPair] is a connected pair of unix sockets, one
// end for the runtime and one for a plugin it launches.
//
// Package multiplex carries several logical connections over one of them.
package net
