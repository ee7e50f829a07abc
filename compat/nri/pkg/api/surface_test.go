package api_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/nri/internal/apisurface"
)

// leftOut says why an exported identifier of upstream's pkg/api is not
// provided here, or "". docs/compat.md lists the same reasons.
func leftOut(name string) string {
	recv, method, isMethod := strings.Cut(name, ".")
	switch {
	case isMethod && (recv == "OwningPlugins" || recv == "FieldOwners") &&
		(strings.HasPrefix(method, "Claim") || strings.HasPrefix(method, "Clear") || strings.HasSuffix(method, "Conflict")),
		name == "NewOwningPlugins", name == "NewFieldOwners", name == "NewCompoundFieldOwners":
		return "ownership is recorded while merging results, by nrinet's merge package; the record is read-only here"
	case isMethod && method == "ToOCI" && recv != "KeyValue" && recv != "LinuxResources", name == "Mount.Cmp", name == "LinuxDevice.Cmp", name == "LinuxDevice.AccessString":
		return "a method of one of nrinet's types that needs the OCI runtime spec; nrinet's api has only those a supported runtime calls"
	case strings.HasPrefix(name, "Wazero") || name == "DefaultWazeroRuntime":
		return "WASM: configures the wazero runtime, which nrinet does not link"
	case name == "HostFunctionsService" || name == "NewHostFunctionsClient" || name == "RegisterHostFunctionsService":
		return "WASM: the HostFunctions ttrpc service, which nrinet's schema does not have"
	case isMethod && (recv == "LogRequest" || recv == "LogRequest_Level") && !slices.Contains([]string{"GetMsg", "GetLevel", "String"}, method) ||
		name == "LogRequest.String":
		return "WASM: LogRequest is a plain struct here, not a protobuf message"
	}
	return ""
}

// TestUpstreamSurface checks that every exported identifier of upstream's
// pkg/api exists here with the same kind, and functions and methods with
// the same signature, unless leftOut gives a reason.
func TestUpstreamSurface(t *testing.T) {
	upDir := apisurface.UpstreamDir("pkg/api")
	if upDir == "" {
		t.Skip("containerd/nri " + apisurface.UpstreamVersion + " is not in the module cache")
	}
	upstream, err := apisurface.Parse(upDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := apisurface.Load(".", apisurface.CompatAPI)
	if err != nil {
		t.Fatal(err)
	}
	api := pkgs[apisurface.CompatAPI]
	problems, checked := apisurface.Compare(upstream, api, api, leftOut)
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d upstream identifiers checked", checked)
	if checked < 1500 {
		t.Errorf("only %d upstream identifiers checked; is the upstream source complete?", checked)
	}
}

// TestLeftOutDocumented checks that docs/compat.md names every identifier
// TestUpstreamSurface lets go missing.
func TestLeftOutDocumented(t *testing.T) {
	upDir := apisurface.UpstreamDir("pkg/api")
	if upDir == "" {
		t.Skip("containerd/nri " + apisurface.UpstreamVersion + " is not in the module cache")
	}
	upstream, err := apisurface.Parse(upDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "compat.md"))
	if err != nil {
		t.Fatal(err)
	}
	reported := map[string]bool{}
	for _, name := range apisurface.Names(upstream, apisurface.Type, apisurface.Func, apisurface.Var, apisurface.Const, apisurface.Method) {
		if leftOut(name) == "" {
			continue
		}
		// Methods are documented by receiver and method name, families
		// of them (Claim*, Clear*) by their prefix.
		recv, method, isMethod := strings.Cut(name, ".")
		mention := name
		switch {
		case isMethod && strings.HasPrefix(method, "Claim"):
			mention = recv + ".Claim*"
		case isMethod && strings.HasPrefix(method, "Clear"):
			mention = recv + ".Clear*"
		case isMethod && strings.HasPrefix(recv, "LogRequest"):
			mention = recv
		}
		if !strings.Contains(string(doc), "`"+mention+"`") && !reported[mention] {
			reported[mention] = true
			t.Errorf("docs/compat.md does not mention `%s` (left out: %s)", mention, leftOut(name))
		}
	}
}
