package plugin_test

import (
	"os"
	"strings"
	"testing"
)

// docPage is the page whose Go code example_test.go holds.
const docPage = "../docs/writing-plugins.md"

// TestDocExamples: the Go code docs/writing-plugins.md shows (the network
// plugin podNet, the observer netLogger run with Stub.Run) is
// example_test.go's, which compiles and runs, word for word.
func TestDocExamples(t *testing.T) {
	page, err := os.ReadFile(docPage)
	if err != nil {
		t.Fatal(err)
	}
	section := string(page)
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for {
		var block string
		var ok bool
		_, section, ok = strings.Cut(section, "```go\n")
		if !ok {
			break
		}
		block, section, _ = strings.Cut(section, "```")
		blocks++
		if !strings.Contains(string(example), block) {
			t.Errorf("Go block %d of %s is not in example_test.go; the page has:\n%s", blocks, docPage, block)
		}
	}
	if blocks < 2 {
		t.Errorf("%s has %d Go blocks, want the network plugin and the observer", docPage, blocks)
	}
}
