package mdtable_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/mdtable"
)

func TestScan(t *testing.T) {
	doc := strings.Join([]string{
		"# Title",               // 1
		"| a | b |",             // 2: header
		"|---|:-:|",             // 3: delimiter
		"| `x` | one \\| two |", // 4
		"|y|z|",                 // 5
		"text between",          // 6
		"  | c |",               // 7: another table's header
		"  | - |",               // 8
		"  | 1 |",               // 9
	}, "\n")
	var got []string
	err := mdtable.Scan(strings.NewReader(doc), func(l mdtable.Line) error {
		if l.Header != nil {
			got = append(got, fmt.Sprintf("%d %q %q", l.Num, l.Header, l.Cells))
		}
		return nil
	})
	want := []string{
		`4 ["a" "b"] ["` + "`x`" + `" "one | two"]`,
		`5 ["a" "b"] ["y" "z"]`,
		`9 ["c"] ["1"]`,
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Scan = %v, rows\n%s\nwant\n%s", err, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestScan_EveryLineAndTheFirstError(t *testing.T) {
	stop := errors.New("stop")
	var texts []string
	err := mdtable.Scan(strings.NewReader("one\n| h |\n| - |\nfour\nfive"), func(l mdtable.Line) error {
		texts = append(texts, l.Text)
		if l.Num == 4 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !reflect.DeepEqual(texts, []string{"one", "| h |", "| - |", "four"}) {
		t.Errorf("Scan = %v after %q, want stop after the fourth line", err, texts)
	}
}

func TestSplitRow(t *testing.T) {
	for row, want := range map[string][]string{
		"| a | b |":      {"a", "b"},
		"|a|b":           {"a", "b"},
		"| `a\\|b` |  |": {"`a|b`", ""},
		"  | only |  ":   {"only"},
	} {
		if got := mdtable.SplitRow(row); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitRow(%q) = %q, want %q", row, got, want)
		}
	}
}
