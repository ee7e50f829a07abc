package doclinks

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Link is one link of a page: its target as written ("install.md#versions",
// "../deploy/", "#requirements") and the line it is on, from 1.
type Link struct {
	Target string
	Line   int
}

// inlineLink matches [text](target) and ![alt](target), with an optional
// "title" after the target.
var inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

// heading matches an ATX heading: one to six # and its text, without
// closing #s.
var heading = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)

// codeSpan matches an inline code span of one or two backticks.
var codeSpan = regexp.MustCompile("``[^`]+``|`[^`]+`")

// lines calls fn with every line of markdown outside fenced code blocks
// (``` or ~~~), with its number from 1.
func lines(markdown string, fn func(n int, line string)) {
	var fence string
	for i, l := range strings.Split(markdown, "\n") {
		t := strings.TrimLeft(l, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		case strings.HasPrefix(t, "```"), strings.HasPrefix(t, "~~~"):
			fence = t[:3]
			continue
		}
		fn(i+1, l)
	}
}

// Links returns the inline links and images of a page, in order, but
// those in fenced code blocks and code spans.
func Links(markdown string) []Link {
	var out []Link
	lines(markdown, func(n int, l string) {
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			out = append(out, Link{Target: m[1], Line: n})
		}
	})
	return out
}

// Anchors returns the anchors of a page's headings: each heading's
// [Slug], and for a slug seen before, the slug with -1, -2, ... as GitHub
// numbers repeated headings.
func Anchors(markdown string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines(markdown, func(_ int, l string) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			return
		}
		s := Slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	})
	return out
}

// markdownLink is a link in a heading, whose text alone counts.
var markdownLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// Slug is the anchor GitHub gives a heading's text: the text of its
// links, lower case, without punctuation but hyphens and underscores,
// each space a hyphen.
func Slug(text string) string {
	text = markdownLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-', r == '_', unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
