package masq_test

import (
	"fmt"
	"log"

	"github.com/nrinet/nrinet/plugins/podnet/masq"
)

// Masquerade what this node's pods send outside the cluster, in the
// process's network namespace; the table stays until Remove.
func Example() {
	cluster, err := masq.ParseCIDRs("198.18.0.0/15,fd00:198:18::/48")
	if err != nil {
		log.Fatal(err)
	}
	pods, _ := masq.ParseCIDRs("198.18.1.0/24,fd00:198:18:1::/64")
	m, err := masq.New()
	if err != nil {
		log.Fatal(err)
	}
	changed, err := m.Sync(pods, cluster) // again: changed is false
	if err != nil {
		log.Fatal(err)
	}
	rules, _, _ := m.Rules()
	fmt.Println(changed, len(rules))
}
