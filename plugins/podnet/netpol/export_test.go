package netpol

import "log/slog"

// OpenDenyLogBuffer is OpenDenyLog with a socket receive buffer of n
// bytes.
func (e *Enforcer) OpenDenyLogBuffer(log *slog.Logger, n int) (*DenyLog, error) {
	return e.openDenyLog(log, n)
}

// ParsePacket is parsePacket, with the port as the log writes it.
func ParsePacket(b []byte) (src, dst, port string, ok bool) {
	p, ok := parsePacket(b)
	return p.src.String(), p.dst.String(), p.port(), ok
}
