// Package mux carries several logical byte-stream connections over one
// stream socket, the way the containerd NRI protocol does.
//
// Every byte on the shared connection (the "trunk") belongs to a frame:
//
//	offset  size  field
//	0       4     connection id, big-endian uint32 (0 is reserved)
//	4       4     payload length N, big-endian uint32
//	8       N     payload: the next N bytes of that connection's stream
//
// NRI uses two logical connections: [PluginServiceConn] (1) carries the
// ttrpc session in which the runtime calls the plugin, and
// [RuntimeServiceConn] (2) the session in which the plugin calls the
// runtime. Both ends are ttrpc client and server at once.
//
// # Compatibility
//
// The Go reader of upstream NRI returns exactly one frame per Read and fails
// a frame that is larger than the caller's buffer; Go's ttrpc reads through a
// 4096-byte bufio.Reader. A peer therefore has to keep the first frame of a
// ttrpc message at or below 4096 bytes. This package writes one frame per
// Write call (split at [MaxPayload]), so ttrpc on top of it, whose bufio.Writer
// emits "at most 4096 bytes, then the rest", produces exactly the frames the
// upstream reader accepts. Incoming frames are reassembled as a plain byte
// stream, so any frame boundaries are accepted.
//
// # Differences from upstream
//
//   - A frame header announcing more than [MaxPayload] bytes is rejected
//     before anything is allocated, and the trunk is closed.
//   - A frame for a connection id that was never opened is a protocol error
//     (upstream drops it silently, which hides garbage on the wire).
//   - Header and payload go out in one write system call.
//   - When the trunk breaks, every logical connection returns the same
//     error, available from [Mux.Err], so the owner can log why.
//
// The package knows nothing about NRI messages; it depends on the standard
// library only, and has a fuzz target for its frame reader.
package mux
