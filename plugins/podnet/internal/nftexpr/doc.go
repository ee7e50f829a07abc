// Package nftexpr holds the nftables expressions nri-podnet's tables
// (packages hostport and netpol) build alike: the offsets of the
// addresses in the network header, and the match of a family.
package nftexpr
