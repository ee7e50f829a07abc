// Package stub is containerd/nri's pkg/stub on nrinet.
package stub
