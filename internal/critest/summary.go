package critest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Summary is a Markdown table of every spec's outcome per variant (in
// the order of variants; those without results are left out), then each
// variant's totals and time.
func Summary(variants []string, results map[string][]Spec, times map[string]time.Duration) string {
	var ran []string
	for _, v := range variants {
		if _, ok := results[v]; ok {
			ran = append(ran, v)
		}
	}
	var names []string
	state := map[string]map[string]string{}
	for _, v := range ran {
		for _, r := range results[v] {
			if state[r.Name] == nil {
				state[r.Name] = map[string]string{}
				names = append(names, r.Name)
			}
			state[r.Name][v] = r.State
			if r.Excused != "" {
				state[r.Name][v] += " (excused)"
			}
		}
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "| spec | %s |\n|---|%s\n", strings.Join(ran, " | "), strings.Repeat("---|", len(ran)))
	for _, n := range names {
		row := make([]string, len(ran))
		for i, v := range ran {
			row[i] = cmp.Or(state[n][v], "-")
		}
		name := strings.ReplaceAll(strings.TrimPrefix(n, "[k8s.io] "), "|", `\|`)
		fmt.Fprintf(&b, "| %s | %s |\n", name, strings.Join(row, " | "))
	}
	b.WriteString("\n")
	for _, v := range ran {
		count := map[string]int{}
		for _, r := range results[v] {
			count[r.State]++
		}
		fmt.Fprintf(&b, "- %s: passed %d, failed %d, skipped %d (critest and the runtime's start, %v)\n",
			v, count["passed"], len(results[v])-count["passed"]-count["skipped"], count["skipped"], times[v].Round(time.Second))
	}
	return b.String()
}
