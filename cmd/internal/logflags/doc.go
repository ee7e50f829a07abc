// Package logflags is the logging every nrinet command takes, written
// once: -log-level (debug, info, warn, error) and -log-format (text, json),
// to standard error with log/slog.
package logflags
