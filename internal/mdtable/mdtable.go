package mdtable

import (
	"bufio"
	"io"
	"strings"
)

// Line is one line of a document.
type Line struct {
	// Num is the line's number, from 1.
	Num int
	// Text is the line as read.
	Text string
	// Header is the header's cells of the table whose body row the line
	// is; nil for any other line (a table's header and delimiter row
	// included).
	Header []string
	// Cells are the row's cells when Header is set.
	Cells []string
}

// Scan calls fn for every line of r, in order. It returns fn's first
// error, or the reader's.
func Scan(r io.Reader, fn func(Line) error) error {
	var header []string // of the table the scan is in; nil outside one
	sc := bufio.NewScanner(r)
	for num := 1; sc.Scan(); num++ {
		l := Line{Num: num, Text: sc.Text()}
		switch text := strings.TrimSpace(l.Text); {
		case !strings.HasPrefix(text, "|"):
			header = nil
		case header == nil:
			header = SplitRow(text)
		default:
			if cells := SplitRow(text); strings.Trim(strings.Join(cells, ""), "-: ") != "" {
				l.Header, l.Cells = header, cells
			}
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return sc.Err()
}

// SplitRow returns the cells of a table row, trimmed; "\|" is a "|"
// inside a cell.
func SplitRow(row string) []string {
	row = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(row), "|"), "|")
	cells := strings.Split(strings.ReplaceAll(row, `\|`, "\x00"), "|")
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(strings.TrimSpace(c), "\x00", "|")
	}
	return cells
}
