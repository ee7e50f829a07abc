package logflags

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/nrinet/nrinet/cmd/internal/cli"
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

// Add defines -log-level and -log-format on c, defaulting to info and
// text; the command line's Parse refuses any other level or format.
func Add(c *cli.Command) *Flags {
	f := &Flags{}
	c.StringVar(&f.Level, "log-level", "info", "log `level`: debug, info, warn or error", CheckLevel)
	c.StringVar(&f.Format, "log-format", FormatText, "log `format`: text or json", CheckFormat)
	return f
}

// CheckLevel checks a value of -log-level.
func CheckLevel(s string) error {
	var l slog.Level
	if l.UnmarshalText([]byte(s)) != nil {
		return errors.New("want debug, info, warn or error")
	}
	return nil
}

// CheckFormat checks a value of -log-format.
func CheckFormat(s string) error {
	if s != FormatText && s != FormatJSON {
		return errors.New("want text or json")
	}
	return nil
}

// Logger returns the logger the flags ask for, writing to w, or an error
// naming the flag and the bad value.
func (f *Flags) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.Level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", f.Level)
	}
	log, err := New(w, level, f.Format)
	if err != nil {
		return nil, fmt.Errorf("-log-format %q: %w", f.Format, err)
	}
	return log, nil
}

// New returns a logger writing to w at level in format (text or json;
// "" is text).
func New(w io.Writer, level slog.Level, format string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case FormatText, "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case FormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, errors.New("want text or json")
}
