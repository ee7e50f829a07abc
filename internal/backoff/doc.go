// Package backoff is the delay nrinet waits between retries: exponential
// from an initial delay, capped, and jittered (each delay drawn from its
// upper half), so that plugins and watchers that fail together do not
// retry together. The plugin library's reconnection, the runtime
// library's restart of launched plugins and nri-podnet's Node watcher all
// use it.
//
// k8s.io/apimachinery's wait.Backoff does the same, but the root module,
// which runtimes link (containerd, CRI-O), must not require apimachinery
// and its dependencies (docs/dev/modules.md; test/gomod checks it).
package backoff
