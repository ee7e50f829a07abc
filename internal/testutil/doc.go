// Package testutil holds helpers shared by tests that need root and real
// kernel objects: named network namespaces, the CNI reference plugins, and
// a ping between namespaces. Everything it creates is removed by exact
// name when the test ends.
//
// Root-only tests call SkipUnlessRoot: outside CI it skips, in CI
// (CI=true) a missing privilege fails the test.
package testutil
