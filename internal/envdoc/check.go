package envdoc

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Check compares the table with the repository and returns every
// disagreement, one error each:
//   - a name the code uses that has no row (a name ending in "_" is a
//     pattern row's prefix);
//   - a row no code uses;
//   - a name a Markdown file, or the table itself, names that is neither
//     a row nor built by a pattern row;
//   - a default the code spells out that the row's default cell does not
//     hold;
//   - a "read by" cell's `path` (with a slash, or Makefile) that uses no
//     such name, or `make target` that the Makefile does not define.
func (d Doc) Check(r Repo) []error {
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(r.Code)) {
		if _, ok := d.Row(n); !ok {
			errs = append(errs, fmt.Errorf("%s (%s) has no row in %s", n, list(r.Code[n]), TableFile))
		}
	}
	for _, row := range d.Rows {
		key := row.key()
		if len(r.Code[key]) == 0 {
			errs = append(errs, fmt.Errorf("%s line %d: %s: no file but the documentation uses it", TableFile, row.Line, row.Name))
			continue
		}
		for _, c := range codes(row.ReadBy) {
			if t, ok := strings.CutPrefix(c, "make "); ok {
				if !slices.Contains(r.Targets, t) {
					errs = append(errs, fmt.Errorf("%s line %d: %s: read by `%s`, which the Makefile does not define", TableFile, row.Line, row.Name, c))
				}
				continue
			}
			if !strings.Contains(c, "/") && c != "Makefile" {
				continue
			}
			p := strings.TrimSuffix(c, "/")
			if !slices.ContainsFunc(r.Code[key], func(f string) bool { return f == p || strings.HasPrefix(f, p+"/") }) {
				errs = append(errs, fmt.Errorf("%s line %d: %s: read by `%s`, which does not use it (%s do)", TableFile, row.Line, row.Name, c, list(r.Code[key])))
			}
		}
	}
	mentions := Uses{}
	for _, n := range d.Mentions {
		mentions.add(n, TableFile)
	}
	for n, files := range r.Docs {
		for _, f := range files {
			mentions.add(n, f)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(mentions)) {
		_, row := d.Row(n)
		_, built := d.Built(n)
		if !row && !built {
			errs = append(errs, fmt.Errorf("%s, named in %s, has no row in %s", n, list(mentions[n]), TableFile))
		}
	}
	for _, def := range r.Defaults {
		row, ok := d.Row(def.Name)
		if ok && !strings.Contains(row.Default, def.Value) {
			errs = append(errs, fmt.Errorf("%s line %d: %s: %s defaults it to %q, which the default cell (%q) does not say", TableFile, row.Line, row.Name, def.File, def.Value, row.Default))
		}
	}
	return errs
}

// key is the name code uses for the row: the name, or a pattern's prefix.
func (r Row) key() string {
	if p, ok := r.Prefix(); ok {
		return p
	}
	return r.Name
}

// list names up to four files.
func list(files []string) string {
	if len(files) > 4 {
		return strings.Join(files[:4], ", ") + fmt.Sprintf(" and %d more", len(files)-4)
	}
	return strings.Join(files, ", ")
}
