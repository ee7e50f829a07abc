// Package layering has no code: its test checks the import rules between
// nrinet's packages (docs/dev/architecture.md, "Layers"), so that the
// libraries runtimes and plugins embed stay small.
package layering
