// Command testsummary reads `go test -json` on standard input and prints,
// one line each, how every test ended: "PASS name", "FAIL name" or "SKIP
// name". With -check FILE it instead compares the failing tests with the
// expected failures FILE lists ("name<TAB>reason" per line, # comments)
// and exits 1 on an unexpected failure, on an expected failure that
// passed, or when the tests did not build. hack/upstream-suite.sh uses it.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of go test -json.
type event struct {
	Action string
	Test   string
	Output string
}

func main() {
	check := flag.String("check", "", "file of expected failures")
	flag.Parse()
	results, output, err := read(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if *check == "" {
		names := make([]string, 0, len(results))
		for name := range results {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			fmt.Println(results[name], name)
		}
		return
	}
	expected, err := readExpected(*check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	problems := compare(results, expected)
	if len(results) == 0 {
		problems = append(problems, "no test ran (did the tests build?):\n"+output)
	}
	// Counted are the leaves, the tests without subtests: a parent
	// fails with any of its subtests and would count each failure twice.
	pass, fail, skip := 0, 0, 0
	for name, r := range results {
		if hasChild(results, name) {
			continue
		}
		switch r {
		case "PASS":
			pass++
		case "FAIL":
			fail++
		default:
			skip++
		}
	}
	fmt.Printf("upstream suite: %d tests: %d passed, %d failed (%d expected), %d skipped\n", pass+fail+skip, pass, fail, len(expected), skip)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		os.Exit(1)
	}
}

// read collects the final action of every test, and the output of lines
// that belong to no test (build errors).
func read(r io.Reader) (map[string]string, string, error) {
	results := map[string]string{}
	var loose strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			loose.Write(line) // go test prints build failures as text
			loose.WriteByte('\n')
			continue
		}
		switch {
		case ev.Test == "" && ev.Action == "output":
			loose.WriteString(ev.Output)
		case ev.Test != "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
			results[ev.Test] = strings.ToUpper(ev.Action)
		}
	}
	return results, loose.String(), sc.Err()
}

// readExpected reads the expected failures: name<TAB>reason.
func readExpected(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, "\t")
		out[strings.TrimSpace(name)] = strings.TrimSpace(reason)
	}
	return out, nil
}

// compare reports failing leaves (failed tests none of whose subtests
// failed) that are not expected, and expected failures that did not fail.
func compare(results, expected map[string]string) []string {
	var problems []string
	for name, r := range results {
		if r != "FAIL" || hasFailingChild(results, name) {
			continue
		}
		if _, ok := expected[name]; !ok {
			problems = append(problems, "unexpected failure: "+name)
		}
	}
	for name, why := range expected {
		if results[name] != "FAIL" {
			problems = append(problems, fmt.Sprintf("expected to fail (%s) but %s: %s", why, cmp.Or(results[name], "did not run"), name))
		}
	}
	slices.Sort(problems)
	return problems
}

func hasFailingChild(results map[string]string, name string) bool {
	for other, r := range results {
		if r == "FAIL" && strings.HasPrefix(other, name+"/") {
			return true
		}
	}
	return false
}

func hasChild(results map[string]string, name string) bool {
	for other := range results {
		if strings.HasPrefix(other, name+"/") {
			return true
		}
	}
	return false
}
