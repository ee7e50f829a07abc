// Package gobin installs Go programs from the module proxy into cache
// directories shared by the tests, the demo and CI, once: the CNI
// reference plugins and crictl with Install, and critest, which is a test
// binary, with InstallTest.
package gobin
