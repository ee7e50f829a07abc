// Package multiplex is upstream NRI's connection multiplexer API over
// nrinet's mux package: [Multiplex] carries several logical connections,
// identified by a [ConnID], over one trunk connection, with the same frame
// format on the wire. NRI uses [PluginServiceConn] and
// [RuntimeServiceConn].
//
// Differences from upstream, all nrinet mux's:
//
//   - A frame for a connection that has not been opened yet breaks the
//     trunk (upstream drops it). Open or Listen every connection the peer
//     may use before it sends, or create the Mux with WithBlockedRead and
//     Unblock it once they are open.
//   - Received but unread data is bounded per connection in bytes
//     (64 MiB), not in frames: WithReadQueueLength is accepted and has no
//     effect.
//   - Deadlines on the logical connections work.
package multiplex
