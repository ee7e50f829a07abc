package cni_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// recorderType is the CNI plugin type of the recording plugin: the test
// binary, re-executed under this name (TestMain runs recorderMain then).
// Chained last in a conflist with every capability containerd passes, it
// records, for each call, its CNI_* environment and its standard input, so
// that a test sees exactly what libcni handed a plugin.
const recorderType = "nrcni-recorder"

// recorderConf is the recorder's own part of its plugin configuration.
type recorderConf struct {
	CNIVersion string `json:"cniVersion"`
	// RecordDir receives one JSON file (a record) per call.
	RecordDir string `json:"recordDir"`
	// FailStatus, if set, makes STATUS fail with CNI error code 50 and
	// this message.
	FailStatus string          `json:"failStatus"`
	PrevResult json.RawMessage `json:"prevResult"`
}

// record is one call of the recorder.
type record struct {
	Command string            `json:"command"`
	Env     map[string]string `json:"env"`   // the CNI_* variables
	Stdin   json.RawMessage   `json:"stdin"` // the plugin configuration
	Seq     int64             `json:"seq"`   // orders the calls
}

// recorderCapabilities are the capabilities containerd v2.4.2 may pass
// (internal/cri/server/sandbox_run.go, cniNamespaceOpts); the recorder
// declares them all, so libcni hands it every one the runtime passed.
var recorderCapabilities = map[string]bool{
	"portMappings": true, "bandwidth": true, "dns": true, "cgroupPath": true,
	"io.kubernetes.cri.pod-annotations": true,
}

// recorderPlugin is the recorder's entry in a conflist.
func recorderPlugin(dir, failStatus string) map[string]any {
	m := map[string]any{"type": recorderType, "recordDir": dir, "capabilities": recorderCapabilities}
	if failStatus != "" {
		m["failStatus"] = failStatus
	}
	return m
}

// recorderBinDir returns a directory holding the recorder: a symbolic link
// to the test binary.
func recorderBinDir(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, recorderType)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// recorderMain is the recorder's main: VERSION lists every spec version
// the tests use; ADD records and passes the previous result on; STATUS
// records and fails if asked to; every other command records.
func recorderMain() int {
	fail := func(code int, msg string) int {
		fmt.Printf(`{"cniVersion": "1.0.0", "code": %d, "msg": %q}`, code, msg)
		return 1
	}
	cmd := os.Getenv("CNI_COMMAND")
	if cmd == "VERSION" {
		fmt.Print(`{"cniVersion": "1.1.0", "supportedVersions": ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]}`)
		return 0
	}
	stdin, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fail(100, err.Error())
	}
	var conf recorderConf
	if err := json.Unmarshal(stdin, &conf); err != nil || conf.RecordDir == "" {
		return fail(6, fmt.Sprintf("bad configuration %q: %v", stdin, err))
	}
	rec := record{Command: cmd, Env: map[string]string{}, Stdin: stdin, Seq: time.Now().UnixNano()}
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CNI_") {
			rec.Env[k] = v
		}
	}
	b, _ := json.Marshal(rec)
	name := fmt.Sprintf("%d-%s-%s.json", rec.Seq, cmd, os.Getenv("CNI_CONTAINERID"))
	if err := os.WriteFile(filepath.Join(conf.RecordDir, name), b, 0o644); err != nil {
		return fail(100, err.Error())
	}
	switch cmd {
	case "ADD":
		if len(conf.PrevResult) == 0 {
			fmt.Printf(`{"cniVersion": %q}`, conf.CNIVersion)
			return 0
		}
		var prev map[string]any
		if err := json.Unmarshal(conf.PrevResult, &prev); err != nil {
			return fail(100, err.Error())
		}
		prev["cniVersion"] = conf.CNIVersion
		out, _ := json.Marshal(prev)
		os.Stdout.Write(out)
	case "STATUS":
		if conf.FailStatus != "" {
			return fail(50, conf.FailStatus)
		}
	}
	return 0
}

// records returns the recorder's records in dir, in call order, for
// command (every command if empty) and container ID (any if empty).
func records(t testing.TB, dir, command, containerID string) []record {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []record
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if (command == "" || r.Command == command) && (containerID == "" || r.Env["CNI_CONTAINERID"] == containerID) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b record) int { return int(a.Seq - b.Seq) })
	return out
}

// commands lists the commands of records, in order.
func commands(rs []record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Command)
	}
	return out
}
