package plugin_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEExamples: the Go code README's "Writing a plugin" shows (the
// network plugin podNet, the observer netLogger run with Stub.Run) is
// example_test.go's, which compiles and runs, word for word.
func TestREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Writing a plugin\n")
	if !ok {
		t.Fatal(`README.md has no "## Writing a plugin" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for {
		var block string
		_, section, ok = strings.Cut(section, "```go\n")
		if !ok {
			break
		}
		block, section, _ = strings.Cut(section, "```")
		blocks++
		if !strings.Contains(string(example), block) {
			t.Errorf("README.md's Go block %d of \"Writing a plugin\" is not in example_test.go; README has:\n%s", blocks, block)
		}
	}
	if blocks < 2 {
		t.Errorf(`README.md's "Writing a plugin" has %d Go blocks, want the network plugin and the observer`, blocks)
	}
}
