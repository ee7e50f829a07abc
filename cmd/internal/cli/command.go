package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Command is one command's command line: its flags, its usage text and
// the deprecated names of its flags.
type Command struct {
	// Name is the command's name, e.g. "nri-podnet", or "nri-podnet
	// explain" for a subcommand; errors and the usage text begin with it.
	Name string
	// Flags are the command's flags, defined by the command. Parse
	// reports their errors; the flag package prints nothing.
	Flags *flag.FlagSet

	synopsis []string
	about    string
	args     bool
	aliases  map[string]string // deprecated name → name
}

// New returns the command name. about says what it does (one or more
// paragraphs, as they are to be printed); synopsis are the forms of its
// command line after the name, one per line of the usage text, e.g.
// "-config FILE [flags]".
func New(name, about string, synopsis ...string) *Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Command{Name: name, Flags: fs, synopsis: synopsis, about: strings.TrimSpace(about), aliases: map[string]string{}}
}

// AllowArgs lets Parse leave arguments after the flags, for the command to
// check (with UsageError for bad ones); by default they are refused.
func (c *Command) AllowArgs() { c.args = true }

// Usage writes the usage text to w:
//
//	Usage:
//	  NAME SYNOPSIS...
//
//	ABOUT
//
//	Flags:
//	  -flag value
//	    	what it does (default ...)
func (c *Command) Usage(w io.Writer) {
	fmt.Fprintln(w, "Usage:")
	for _, s := range c.synopsis {
		fmt.Fprintf(w, "  %s %s\n", c.Name, s)
	}
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", c.about)
	}
	fmt.Fprintln(w, "\nFlags:")
	c.Flags.SetOutput(w)
	c.Flags.PrintDefaults()
	c.Flags.SetOutput(io.Discard)
}

// Parse parses args, the command line after the command's name. It
// returns flag.ErrHelp for -help and -h (Report prints the usage text,
// status 0), and a usage error with UsageError's hint for an unknown
// flag, a flag without its value, a value the flag refuses (naming the
// flag and the value: -idx "abc": want two digits, 00 to 99) and
// arguments after the flags (unless AllowArgs).
func (c *Command) Parse(args []string) error {
	var bad *badValue
	restore := c.recordFailures(&bad)
	err := c.Flags.Parse(args)
	restore()
	switch {
	case errors.Is(err, flag.ErrHelp):
		return err
	case bad != nil:
		return c.UsageError(bad)
	case err != nil:
		return c.UsageError(err)
	case !c.args && c.Flags.NArg() > 0:
		return c.UsageError(fmt.Errorf("unexpected arguments %q", c.Flags.Args()))
	}
	return nil
}

// UsageError marks err as a usage error (ExitUsage) of this command line,
// with a hint: "ERR (run 'NAME -help' for usage)"; nil stays nil.
func (c *Command) UsageError(err error) error {
	if err == nil {
		return nil
	}
	return Usage(hinted{err: err, name: c.Name})
}

// hinted is a command line error with the hint to run -help.
type hinted struct {
	err  error
	name string
}

func (e hinted) Error() string {
	return fmt.Sprintf("%v (run '%s -help' for usage)", e.err, e.name)
}
func (e hinted) Unwrap() error { return e.err }

// Deprecate defines old as a deprecated name of the flag name, which
// must be defined: both set the same value. Deprecated says when a
// command line used it.
func (c *Command) Deprecate(old, name string) {
	f := c.Flags.Lookup(name)
	if f == nil {
		panic(fmt.Sprintf("cli: Deprecate(%q, %q): no flag -%s", old, name, name))
	}
	arg, _ := flag.UnquoteUsage(f)
	c.Flags.Var(f.Value, old, fmt.Sprintf("deprecated name of -%s `%s`", name, arg))
	c.aliases[old] = name
}

// Deprecated returns, after Parse, one line for each deprecated flag name
// the command line used: "-health-address is deprecated: use
// -http-address".
func (c *Command) Deprecated() []string {
	var lines []string
	c.Flags.Visit(func(f *flag.Flag) {
		if name, ok := c.aliases[f.Name]; ok {
			lines = append(lines, fmt.Sprintf("-%s is deprecated: use -%s", f.Name, name))
		}
	})
	return lines
}

// WarnDeprecated logs each line of Deprecated as a warning.
func (c *Command) WarnDeprecated(log *slog.Logger) {
	for _, l := range c.Deprecated() {
		log.Warn(l)
	}
}

// StringVar defines the string flag name, stored in p, with the default
// value: Set refuses a value check refuses (nil: any), so that Parse
// reports it with check's error as the reason.
func (c *Command) StringVar(p *string, name, value, usage string, check func(string) error) {
	*p = value
	c.Flags.Var(checkedString{p: p, check: check}, name, usage)
}

// checkedString is a string flag whose values are checked as they are
// set.
type checkedString struct {
	p     *string
	check func(string) error
}

func (v checkedString) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v checkedString) Set(s string) error {
	if v.check != nil {
		if err := v.check(s); err != nil {
			return err
		}
	}
	*v.p = s
	return nil
}

// badValue is a value a flag refused.
type badValue struct {
	name, value string
	err         error
}

func (e *badValue) Error() string { return fmt.Sprintf("-%s %q: %v", e.name, e.value, e.err) }
func (e *badValue) Unwrap() error { return e.err }

// recordFailures wraps the Value of every flag for one Parse, so that the
// first value a flag refuses is kept in *bad, with the flag's name; the
// flag package's own message names neither the way the others do.
// restore puts the Values back (the usage text looks at their types).
func (c *Command) recordFailures(bad **badValue) (restore func()) {
	var flags []*flag.Flag
	var values []flag.Value
	c.Flags.VisitAll(func(f *flag.Flag) {
		flags, values = append(flags, f), append(values, f.Value)
		r := recorder{Value: f.Value, name: f.Name, bad: bad}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			f.Value = boolRecorder{r}
		} else {
			f.Value = r
		}
	})
	return func() {
		for i, f := range flags {
			f.Value = values[i]
		}
	}
}

// recorder is a flag's Value that keeps the first value it refuses.
type recorder struct {
	flag.Value
	name string
	bad  **badValue
}

func (r recorder) Set(s string) error {
	err := r.Value.Set(s)
	if err != nil && *r.bad == nil {
		*r.bad = &badValue{name: r.name, value: s, err: err}
	}
	return err
}

// boolRecorder is a bool flag's recorder: -flag alone sets it true.
type boolRecorder struct{ recorder }

func (boolRecorder) IsBoolFlag() bool { return true }

func (r boolRecorder) Set(s string) error {
	err := r.Value.Set(s)
	if err != nil && *r.bad == nil {
		// The flag package's own reason is "parse error".
		*r.bad = &badValue{name: r.name, value: s, err: errors.New("want true or false")}
	}
	return err
}
