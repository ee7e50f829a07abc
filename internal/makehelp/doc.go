// Package makehelp has no code: its tests hold make help to the Makefile.
// make help prints every target with one line, by group, from the
// "## [group] text" line right above each rule (hack/make-help.awk); the
// tests check that every target make knows is in that list and nothing
// else is, that test stays make's default goal, and that the script
// refuses a malformed description instead of leaving a target out.
package makehelp
