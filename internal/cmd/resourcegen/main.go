// Command resourcegen writes api/resources_generated.go: the helpers
// that set a container's Linux resources, once for ContainerAdjustment
// (a container being created) and once for ContainerUpdate (a running
// one), with upstream containerd/nri's names and signatures. The two sets
// are the same but for three doc notes, so they are written from one
// table instead of being kept alike by hand.
//
//	go run ./internal/cmd/resourcegen -out api/resources_generated.go
//
// go generate ./api runs it; api's TestResourceHelpersUpToDate checks the
// committed file against its output.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"strings"
	"text/template"
)

// receiver is a message type the helpers are methods of.
type receiver struct {
	Type string // ContainerAdjustment or ContainerUpdate
	Var  string // the receiver's name
	Key  string // its key in helper.Notes
}

var receivers = []receiver{
	{Type: "ContainerAdjustment", Var: "a", Key: "adjustment"},
	{Type: "ContainerUpdate", Var: "u", Key: "update"},
}

// helper is one method. Body uses $R for the receiver's resources (the
// receiver's resources() method, which creates them when missing).
type helper struct {
	Name, Params, Doc, Body string
	// Notes ends the doc of one receiver's method (by receiver.Key),
	// before the full stop.
	Notes map[string]string
}

var helpers = []helper{
	{Name: "SetLinuxMemoryLimit", Params: "value int64", Doc: "setting the memory limit in bytes",
		Body: "memoryOf($R).Limit = &OptionalInt64{Value: value}"},
	{Name: "SetLinuxMemoryReservation", Params: "value int64", Doc: "setting the memory reservation (soft limit) in bytes",
		Body: "memoryOf($R).Reservation = &OptionalInt64{Value: value}"},
	{Name: "SetLinuxMemorySwap", Params: "value int64", Doc: "setting the memory plus swap limit in bytes",
		Body: "memoryOf($R).Swap = &OptionalInt64{Value: value}"},
	{Name: "SetLinuxMemoryKernel", Params: "value int64", Doc: "setting the kernel memory limit in bytes",
		Body: "memoryOf($R).Kernel = &OptionalInt64{Value: value}"},
	{Name: "SetLinuxMemoryKernelTCP", Params: "value int64", Doc: "setting the kernel TCP buffer memory limit in bytes",
		Body: "memoryOf($R).KernelTcp = &OptionalInt64{Value: value}"},
	{Name: "SetLinuxMemorySwappiness", Params: "value uint64", Doc: "setting the memory swappiness",
		Body: "memoryOf($R).Swappiness = &OptionalUInt64{Value: value}"},
	{Name: "SetLinuxMemoryDisableOomKiller", Doc: "disabling the OOM killer",
		Body: "memoryOf($R).DisableOomKiller = &OptionalBool{Value: true}"},
	{Name: "SetLinuxMemoryUseHierarchy", Doc: "enabling hierarchical memory accounting",
		Body: "memoryOf($R).UseHierarchy = &OptionalBool{Value: true}"},
	{Name: "SetLinuxCPUShares", Params: "value uint64", Doc: "setting the CPU shares (relative weight)",
		Body: "cpuOf($R).Shares = &OptionalUInt64{Value: value}"},
	{Name: "SetLinuxCPUQuota", Params: "value int64", Doc: "setting the CFS quota in microseconds per period",
		Body: "cpuOf($R).Quota = &OptionalInt64{Value: value}"},
	{Name: "SetLinuxCPUPeriod", Params: "value int64", Doc: "setting the CFS period in microseconds (an unsigned field; int64 as upstream)",
		Body: "cpuOf($R).Period = &OptionalUInt64{Value: uint64(value)}"},
	{Name: "SetLinuxCPURealtimeRuntime", Params: "value int64", Doc: "setting the realtime runtime in microseconds",
		Body: "cpuOf($R).RealtimeRuntime = &OptionalInt64{Value: value}"},
	{Name: "SetLinuxCPURealtimePeriod", Params: "value uint64", Doc: "setting the realtime period in microseconds",
		Body: "cpuOf($R).RealtimePeriod = &OptionalUInt64{Value: value}"},
	{Name: "SetLinuxCPUSetCPUs", Params: "value string", Doc: `setting the cpuset CPU list (e.g. "0-3,8")`,
		Body: "cpuOf($R).Cpus = value"},
	{Name: "SetLinuxCPUSetMems", Params: "value string", Doc: `setting the cpuset memory node list (e.g. "0,1")`,
		Body: "cpuOf($R).Mems = value"},
	{Name: "SetLinuxPidLimits", Params: "value int64", Doc: "setting the maximum number of processes",
		Notes: map[string]string{"update": " (upstream runtimes drop it from updates)"},
		Body:  "pidsOf($R).Limit = value"},
	{Name: "AddLinuxHugepageLimit", Params: "pageSize string, value uint64", Doc: `setting the limit in bytes for huge pages of pageSize (e.g. "2MB")`,
		Body: "addHugepageLimit($R, pageSize, value)"},
	{Name: "AddLinuxDeviceCgroup", Params: "rule *LinuxDeviceCgroup", Doc: "appending a device cgroup rule; nil is ignored",
		Notes: map[string]string{"adjustment": " (not in upstream NRI)", "update": " (not in upstream NRI, whose runtimes drop it from updates)"},
		Body:  "if rule != nil {\nr := $R\nr.Devices = append(r.Devices, rule)\n}"},
	{Name: "AddLinuxUnified", Params: "key, value string", Doc: "setting the cgroup v2 unified resource key to value",
		Body: "unifiedOf($R)[key] = value"},
	{Name: "SetLinuxBlockIOClass", Params: "value string", Doc: "setting the block I/O class",
		Body: "$R.BlockioClass = &OptionalString{Value: value}"},
	{Name: "SetLinuxRDTClass", Params: "value string", Doc: "setting the RDT class",
		Notes: map[string]string{"adjustment": " in resources (see also SetLinuxRDTClosID)"},
		Body:  "$R.RdtClass = &OptionalString{Value: value}"},
}

var file = template.Must(template.New("file").Funcs(template.FuncMap{
	"body": func(h helper, r receiver) string {
		return strings.ReplaceAll(h.Body, "$R", r.Var+".resources()")
	},
}).Parse(`// Code generated by internal/cmd/resourcegen; DO NOT EDIT.

package api

{{range $r := .Receivers}}
// The resource helpers of {{$r.Type}}.
{{range $h := $.Helpers}}
// {{$h.Name}} records {{$h.Doc}}{{index $h.Notes $r.Key}}.
func ({{$r.Var}} *{{$r.Type}}) {{$h.Name}}({{$h.Params}}) {
	{{body $h $r}}
}
{{end}}{{end}}`))

func main() {
	out := flag.String("out", "", "the `file` to write")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: resourcegen -out FILE")
		os.Exit(2)
	}
	var b bytes.Buffer
	if err := file.Execute(&b, map[string]any{"Receivers": receivers, "Helpers": helpers}); err != nil {
		fmt.Fprintln(os.Stderr, "resourcegen:", err)
		os.Exit(1)
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		fmt.Fprintf(os.Stderr, "resourcegen: formatting the output: %v\n%s", err, b.Bytes())
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "resourcegen:", err)
		os.Exit(1)
	}
}
