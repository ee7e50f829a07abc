// Package gomodules has no code: its tests hold the repository's Go
// modules to one list (docs/dev/modules.md). go.work's use lines are the
// modules of the workspace, and the repository's other go.mod files the
// modules outside it; the Makefile derives its lists from those two
// (GO_MODULES, E2E_MODULES, UNIT_MODULES, OUTSIDE_MODULES) instead of
// naming modules itself. The tests check that the derivation holds, that
// make lint vets every module, make unit tests every module of go.work
// but the end-to-end suites (test/*-e2e), make test runs the tests of
// every module outside go.work, a recipe runs each suite's tests, and
// make mod-download downloads every module, which is how .ci/run
// downloads them; and that docs/dev/modules.md's two tables list the
// modules in go.work and those outside it, each once.
package gomodules
