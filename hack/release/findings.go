package main

import (
	"errors"
	"fmt"
)

// findings collects what a check finds wrong with one file, each finding
// prefixed with the file's name.
type findings struct {
	what string // the file's name
	errs []error
}

// add records a finding.
func (f *findings) add(format string, args ...any) {
	f.errs = append(f.errs, fmt.Errorf("%s: "+format, append([]any{f.what}, args...)...))
}

// err returns the findings, joined; nil if there are none.
func (f *findings) err() error { return errors.Join(f.errs...) }
