package helmchart_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/nrinet/nrinet/deploy/test/helmchart"
)

// Render the chart as `helm template --set mode=nri-cni` would, and list
// its objects in Helm's install order.
func ExampleRender() {
	vals, err := helmchart.Values(helmchart.Flags{Set: []string{"mode=nri-cni"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	manifest, err := helmchart.Render(context.Background(), "../../helm/nrinet", vals)
	if err != nil {
		fmt.Println(err)
		return
	}
	for line := range strings.SplitSeq(manifest, "\n") {
		if strings.HasPrefix(line, "kind: ") {
			fmt.Println(strings.TrimPrefix(line, "kind: "))
		}
	}
	// Output:
	// Namespace
	// ServiceAccount
	// ConfigMap
	// DaemonSet
}

// Lint the chart as `helm lint --strict` would: its one message is
// informational (it has no icon).
func ExampleLint() {
	msgs, err := helmchart.Lint("../../helm/nrinet", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range msgs {
		fmt.Println(m)
	}
	// Output:
	// [INFO] Chart.yaml: icon is recommended
}
