// Package envdoc holds docs/dev/environment.md, the table of every NRINET_*
// environment variable the repository's scripts, Makefile and test suites
// read or set, to the code: its test scans every file of the repository
// and fails when a name the code uses has no row, a row names a variable
// nothing uses any more, a Markdown document names one the table lacks, a
// row's "read by" cell names a file or directory that does not use the
// variable or a make target that does not exist, or a default the code
// spells out (${NAME:-value} in a script, NAME ?= value in the Makefile,
// cmp.Or(os.Getenv("NAME"), "value") in Go) is missing from the row's
// default cell.
//
// # Names
//
// [Names] finds the names a text uses: the prefix followed by capitals,
// digits and underscores, with a brace list expanded (with the prefix
// P_, P_KUBE_{BIN,VERSION} is P_KUBE_BIN and P_KUBE_VERSION). A name
// ending in "_" is a prefix code builds names from ("P_E2E_" + plugin);
// the table documents it as a pattern row, P_E2E_<PLUGIN>. This
// package's own code and comments use no name of the repository's
// prefix, so that its scan does not count them.
//
// # Sections
//
//   - [Parse] reads the tables of docs/dev/environment.md into a [Doc].
//   - [Scan] lists a repository's files (git ls-files, or a walk that
//     skips .git, _output and what the root .gitignore ignores) and
//     collects the names, defaults and make targets into a [Repo].
//   - [Doc.Check] compares the two.
package envdoc
