package ocispec

import (
	"fmt"
	"slices"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrinet/nrinet/api"
)

// prepareEnv validates the environment part of an adjustment. A key
// marked with "-" removes the variable. Keys must be non-empty and free
// of "=".
func prepareEnv(env []*api.KeyValue) (listEdit[string], error) {
	var e listEdit[string]
	for i, kv := range env {
		field := fmt.Sprintf("env[%d]", i)
		if kv == nil {
			return e, invalid(field, "<nil>", "nil variable")
		}
		name, removed := unmark(kv.GetKey())
		if name == "" || strings.Contains(name, "=") {
			return e, invalid(field+".key", kv.GetKey(), "not a valid variable name")
		}
		if removed {
			e.remove = append(e.remove, name)
			continue
		}
		e.add = append(e.add, name+"="+kv.GetValue())
	}
	return e, nil
}

// envKey returns the variable name of an environment entry; an entry
// without "=" is all name.
func envKey(kv string) string {
	name, _, _ := strings.Cut(kv, "=")
	return name
}

// applyEnv applies an environment edit to spec.Process.Env. A variable
// that is set keeps the position of its first existing definition (any
// further definitions are dropped); a new one is appended. A variable
// that is both removed and set is first removed, so it ends up set, at
// the end of the list.
func applyEnv(spec *rspec.Spec, e listEdit[string]) {
	if e.empty() || (len(e.add) == 0 && spec.Process == nil) {
		return
	}
	p := ensureProcess(spec)
	p.Env, _ = e.apply(p.Env, envKey)
}

// prepareArgs interprets the args of an adjustment. Empty args leave the
// command line alone; a leading "" (NRI's marker for a plugin replacing
// the arguments of another) is dropped, and args consisting of only that
// marker leave the command line alone too, as upstream NRI does.
func prepareArgs(args []string) []string {
	if len(args) > 0 && args[0] == "" {
		args = args[1:]
	}
	if len(args) == 0 {
		return nil
	}
	return slices.Clone(args)
}

// applyArgs replaces spec.Process.Args if args is non-empty.
func applyArgs(spec *rspec.Spec, args []string) {
	if len(args) > 0 {
		ensureProcess(spec).Args = args
	}
}
