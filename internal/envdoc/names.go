package envdoc

import (
	"regexp"
	"strings"
)

// Names returns the names starting with prefix that text uses, in order,
// as often as it uses them: prefix, then capitals, digits and
// underscores, with a brace list that follows expanded
// (PREFIX_A_{B,C} is PREFIX_A_B and PREFIX_A_C). prefix alone, with
// nothing after it, is not a name.
func Names(text, prefix string) []string {
	var out []string
	for _, m := range namePattern(prefix).FindAllStringSubmatch(text, -1) {
		if m[2] == "" {
			if m[1] != prefix {
				out = append(out, m[1])
			}
			continue
		}
		for _, s := range strings.Split(strings.Trim(m[2], "{}"), ",") {
			out = append(out, m[1]+s)
		}
	}
	return out
}

func namePattern(prefix string) *regexp.Regexp {
	return regexp.MustCompile(`\b(` + regexp.QuoteMeta(prefix) + `[A-Z0-9_]*)(\{[A-Z0-9_]+(?:,[A-Z0-9_]+)*\})?`)
}

// A Default is a value the code gives a variable when it is unset, spelled
// out where it reads it.
type Default struct {
	Name, Value string
	// File is where the code says it (a slash path from the repository's
	// root).
	File string
}

// Defaults returns the defaults text spells out for variables starting
// with prefix, in the three forms the repository uses: a shell's
// ${NAME:-value}, a Makefile's NAME ?= value at the start of a line, and
// Go's cmp.Or(os.Getenv("NAME"), "value"). A value that is empty or
// refers to another variable or command ($) is left out: only literals
// are compared with the table. File is left empty.
func Defaults(text, prefix string) []Default {
	p := regexp.QuoteMeta(prefix) + `[A-Z0-9_]+`
	var out []Default
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`\$\{(` + p + `):-([^}$]+)\}`),
		regexp.MustCompile(`(?m)^(` + p + `)[ \t]*\?=[ \t]*([^$\n#]*[^$\n#\s])[ \t]*$`),
		regexp.MustCompile(`cmp\.Or\(os\.Getenv\("(` + p + `)"\),\s*"([^"$]+)"\)`),
	} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			out = append(out, Default{Name: m[1], Value: m[2]})
		}
	}
	return out
}
