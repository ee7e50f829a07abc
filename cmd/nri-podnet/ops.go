package main

import "flag"

// opsOptions are the operability flags of the command.
type opsOptions struct {
	version bool // -version
}

// addOpsFlags defines the operability flags on fs.
func addOpsFlags(fs *flag.FlagSet) *opsOptions {
	o := &opsOptions{}
	fs.BoolVar(&o.version, "version", false, `print "nri-podnet VERSION" and exit`)
	return o
}
