package plugin_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEExamples: the network plugin README's "Writing a plugin" shows
// is example_test.go's podNet, which compiles, word for word.
func TestREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Writing a plugin\n")
	if !ok {
		t.Fatal(`README.md has no "## Writing a plugin" section`)
	}
	_, block, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal(`README.md's "Writing a plugin" has no Go block`)
	}
	block, _, _ = strings.Cut(block, "```")
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(example), block) {
		t.Errorf("README.md's network plugin is not example_test.go's; README has:\n%s", block)
	}
}
