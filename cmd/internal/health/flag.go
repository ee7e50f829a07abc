package health

import "github.com/nrinet/nrinet/cmd/internal/cli"

// FlagName is the flag of the address the health server listens on, the
// same in every nrinet command: -http-address. It names what the address
// serves, HTTP (/healthz, /readyz, /metrics and nri-podnet's /explain),
// rather than one of its endpoints, as the old names did: the plugins'
// -health-address and nrinetd's -metrics-address.
const FlagName = "http-address"

// AddFlag defines -http-address on c, stored in p (empty by default: no
// server), and old as its deprecated name ("": none). Parse refuses a
// value CheckAddress refuses, naming the flag the command line used.
// what says what the server serves, for the usage text.
func AddFlag(c *cli.Command, p *string, old, what string) {
	c.StringVar(p, FlagName, "", "serve "+what+" on this `host:port`, e.g. :9465 (port 0: any free port); empty: off", func(s string) error {
		if s == "" {
			return nil
		}
		return addressProblem(s)
	})
	if old != "" {
		c.Deprecate(old, FlagName)
	}
}
