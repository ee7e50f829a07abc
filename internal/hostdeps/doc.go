// Package hostdeps is the one list of the programs and Debian packages
// that nrinet's demo, its tests (make test) and CI (.ci/run) need on the
// machine beside Go, and the check that finds what is missing and
// installs it with apt-get, saying what and why, or stops at once with
// one line naming each missing package where there is no apt-get.
//
// The demo calls [Check] with [Demo]; make test and .ci/run run
// internal/cmd/hostdeps, which calls it with [Test] or [CI].
package hostdeps
