package multinet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/testutil"
	"github.com/nrinet/nrinet/plugins/podnet/multinet"
)

// BenchmarkManager_Attach is the time to attach one secondary interface
// of each kind to a pod (allocation, record, link, addresses, up) and
// detach it again; the pod namespaces are made beforehand.
func BenchmarkManager_Attach(b *testing.B) {
	for _, network := range []string{"blue", "mv", "nic"} {
		b.Run(network, func(b *testing.B) {
			e := newEnv(b)
			ctx := context.Background()
			paths := make([]string, b.N)
			for i := range paths {
				paths[i] = testutil.NewNetNS(b, fmt.Sprintf("mnb-%s-%d", e.tag, i))
			}
			var attach, detach time.Duration
			b.ResetTimer()
			for i := range b.N {
				owner := fmt.Sprintf("bench-%d", i)
				start := time.Now()
				if _, err := e.m.Attach(ctx, owner, multinet.Pod{}, paths[i], []multinet.Request{{Claim: "ns/bench", Network: network, IfName: "net1"}}); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if err := e.m.Detach(ctx, owner, paths[i]); err != nil {
					b.Fatal(err)
				}
				attach += mid.Sub(start)
				detach += time.Since(mid)
			}
			b.ReportMetric(float64(attach.Microseconds())/float64(b.N)/1e3, "attach-ms/op")
			b.ReportMetric(float64(detach.Microseconds())/float64(b.N)/1e3, "detach-ms/op")
		})
	}
}
