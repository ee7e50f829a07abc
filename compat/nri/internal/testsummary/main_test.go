package main

import (
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	input := strings.Join([]string{
		`{"Action":"pass","Test":"TestA"}`,
		`{"Action":"fail","Test":"TestB/one"}`,
		`{"Action":"pass","Test":"TestB/two"}`,
		`{"Action":"fail","Test":"TestB"}`,
		`{"Action":"fail","Test":"TestC"}`,
		`{"Action":"pass","Test":"TestD"}`,
	}, "\n")
	results, _, err := read(strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	got := compare(results, map[string]string{"TestB/one": "documented", "TestD": "fixed upstream defect"})
	want := []string{
		"expected to fail (fixed upstream defect) but PASS: TestD",
		"unexpected failure: TestC",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("compare = %q, want %q", got, want)
	}
}
