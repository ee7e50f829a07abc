package envdoc

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/nrinet/nrinet/internal/mdtable"
)

// Header is the header of every variables table of docs/dev/environment.md.
var Header = []string{"variable", "read by", "default", "meaning"}

// Row is a row of a variables table.
type Row struct {
	// Name is the variable, the first cell's first text in backquotes:
	// a name (P_CHAOS) or a pattern (P_E2E_<PLUGIN>).
	Name string
	// ReadBy, Default and Meaning are the other cells, as written.
	ReadBy, Default, Meaning string
	// Line is the row's line in the document, from 1.
	Line int
}

// Prefix returns the fixed part of a pattern row's name (P_E2E_ of
// P_E2E_<PLUGIN>), and false for a row that names one variable.
func (r Row) Prefix() (string, bool) {
	i := strings.IndexByte(r.Name, '<')
	if i < 0 {
		return "", false
	}
	return r.Name[:i], true
}

// Doc is what docs/dev/environment.md documents.
type Doc struct {
	Rows []Row
	// Mentions are the names the whole document uses ([Names]), rows and
	// prose alike.
	Mentions []string
}

// Row returns the row of name, a variable's name or a pattern's prefix.
func (d Doc) Row(name string) (Row, bool) {
	for _, r := range d.Rows {
		if p, ok := r.Prefix(); r.Name == name || ok && p == name {
			return r, true
		}
	}
	return Row{}, false
}

// Built returns the pattern row whose prefix starts name, when name is
// one a pattern row describes (P_E2E_STUB of P_E2E_<PLUGIN>).
func (d Doc) Built(name string) (Row, bool) {
	for _, r := range d.Rows {
		if p, ok := r.Prefix(); ok && strings.HasPrefix(name, p) {
			return r, true
		}
	}
	return Row{}, false
}

// Parse reads the variables tables of a document: every Markdown table
// whose header is [Header]. The names must start with prefix
// and be unique.
func Parse(r io.Reader, prefix string) (Doc, error) {
	name := regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `([A-Z0-9_]+|[A-Z0-9_]*<[A-Z]+>)$`)
	var d Doc
	seen := map[string]int{}
	err := mdtable.Scan(r, func(l mdtable.Line) error {
		d.Mentions = append(d.Mentions, Names(l.Text, prefix)...)
		if !slices.Equal(l.Header, Header) {
			return nil
		}
		cells, line := l.Cells, l.Num
		if len(cells) != len(Header) {
			return fmt.Errorf("envdoc: line %d: %d cells, want %d (%s)", line, len(cells), len(Header), strings.Join(Header, " | "))
		}
		n := firstCode(cells[0])
		if !name.MatchString(n) {
			return fmt.Errorf("envdoc: line %d: first cell %q: want a name %s... or a pattern %s...<WHAT> in backquotes", line, cells[0], prefix, prefix)
		}
		if at, dup := seen[n]; dup {
			return fmt.Errorf("envdoc: line %d: %s has a row already, line %d", line, n, at)
		}
		seen[n] = line
		d.Rows = append(d.Rows, Row{Name: n, ReadBy: cells[1], Default: cells[2], Meaning: cells[3], Line: line})
		return nil
	})
	if err != nil {
		return Doc{}, err
	}
	if len(d.Rows) == 0 {
		return Doc{}, fmt.Errorf("envdoc: no table with the header %q", strings.Join(Header, " | "))
	}
	return d, nil
}

// firstCode returns the text between the first two backquotes of cell.
func firstCode(cell string) string {
	_, rest, ok := strings.Cut(cell, "`")
	if !ok {
		return ""
	}
	code, _, ok := strings.Cut(rest, "`")
	if !ok {
		return ""
	}
	return code
}

// codes returns every text between backquotes in cell.
func codes(cell string) []string {
	parts := strings.Split(cell, "`")
	var out []string
	for i := 1; i < len(parts)-1; i += 2 {
		out = append(out, parts[i])
	}
	return out
}
