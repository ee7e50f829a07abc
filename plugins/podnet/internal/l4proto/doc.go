// Package l4proto is the one transport protocol type of nri-podnet's
// kernel agents: hostport's mappings and netpol's policy ports name their
// protocol with it (each package re-exports it under its own name,
// Protocol), by the protocol's IP protocol number, and print it the same
// way.
package l4proto
