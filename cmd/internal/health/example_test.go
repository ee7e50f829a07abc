package health_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrinet/nrinet/cmd/internal/health"
)

// A process's readiness grows as its parts start: each adds its check.
func ExampleHandler() {
	reg := prometheus.NewRegistry()
	var checks health.Checks
	checks.Add(func() (bool, string) { return false, `plugin "10-podnet": not connected to the runtime yet` })
	h := health.Handler(reg, checks.Ready)

	for _, path := range []string{"/healthz", "/readyz"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		fmt.Print(path, " ", rec.Code, " ", rec.Body.String())
	}
	// Output:
	// /healthz 200 ok
	// /readyz 503 plugin "10-podnet": not connected to the runtime yet
}
