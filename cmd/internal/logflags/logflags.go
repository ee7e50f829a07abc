package logflags

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// Formats are the values of -log-format.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// Flags are the values of -log-level and -log-format.
type Flags struct {
	Level, Format string
}

// Add defines -log-level and -log-format on fs, defaulting to info and
// text.
func Add(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.Level, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&f.Format, "log-format", FormatText, "log `format`: text or json")
	return f
}

// Logger returns the logger the flags ask for, writing to w, or an error
// naming the flag and the bad value.
func (f *Flags) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.Level)); err != nil {
		return nil, fmt.Errorf("-log-level %q is not debug, info, warn or error", f.Level)
	}
	return New(w, level, f.Format)
}

// New returns a logger writing to w at level in format (text or json).
func New(w io.Writer, level slog.Level, format string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case FormatText, "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case FormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q is not text or json", format)
}
