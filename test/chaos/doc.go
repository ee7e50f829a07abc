// Package chaos is nrinetd's chaos test: nrinetd with nri-podnet
// launched from its plugin directory (a required network plugin) and a
// second, external plugin, driven by concurrent CRI workers while a chaos
// loop kills nrinetd and the plugins with SIGKILL, restarts them, and
// checks after each restart, and at the end, that nothing leaked or went
// wrong.
//
//	make chaos                      # CHAOS_DURATION=20m by default
//	make chaos CHAOS_DURATION=5m
//	make chaos-ci                   # about 60 s, run by .ci/run after make test
//
// # Enabling
//
// TestChaos runs only when NRINET_CHAOS is set to a duration (e.g.
// NRINET_CHAOS=60s) and the test runs as root; otherwise it skips at
// once and TestMain builds nothing, so `go test ./...` (make test) only
// compiles it. An environment variable rather than a build tag keeps the
// package compiled and vetted by make test. Other knobs:
//
//	NRINET_CHAOS_WORKERS  concurrent CRI workers (default 6)
//	NRINET_CHAOS_SEED     seed of the random choices (default: random, logged)
//	NRINET_CHAOS_RACE=1   build nrinetd and nri-podnet with -race; a data race
//	                      they report is a violation (make chaos and chaos-ci set it)
//	NRINET_CHAOS_KEEP=1   keep the temporary directory (logs, state) afterwards
//
// # Setup
//
// TestMain builds nrinetd and nri-podnet, then runs the tests again in a
// child process with its own mount namespace, in which a tmpfs is mounted
// on /run/netns: every network namespace file there belongs to this test,
// so a leftover one is found exactly, other tests running on the machine
// neither see nor disturb them, and all of them go away with the test.
// The child is a child subreaper, so that the plugins of a killed nrinetd
// are reparented to it and can be found and reaped by PID.
//
// nrinetd runs with its own sockets, state, plugin and configuration
// directories in a temporary directory, required_network_plugins =
// ["podnet"], and nri-podnet installed as the pre-installed plugin
// 10-podnet on a bridge named nrch<8 hex digits>, dual-stack, with a
// random /24 of 198.19.0.0/16 and a /64 of fd00:198:18::/48.
//
// The second plugin, 20-chaostag, is this test binary run again as an
// external plugin (plugin.WithReconnect, the library's defaults) that adds
// the info key chaos.nrinet.io/tag to every pod's network, from
// RunPodSandbox and from PodSandboxStatus, and observes StopPodSandbox and
// RemovePodSandbox. It owns no address, so it never competes with
// nri-podnet, yet it takes part in every pod's network merge and status
// round. It is external, not a second pre-installed plugin, so that both
// ways of coming back are exercised: nrinetd relaunches nri-podnet
// (runtime supervision), and 20-chaostag reconnects by itself to a
// restarted nrinetd (the plugin library's reconnect loop), or is started
// again by the test after it was killed.
//
// # Workers
//
// Each worker owns its pods (labelled with the run and the worker) and
// loops over RunPodSandbox (about one pod in ten host-network), verbose
// and plain PodSandboxStatus, StopPodSandbox and RemovePodSandbox over the
// CRI gRPC API (k8s.io/cri-api, what crictl speaks); one verbose status
// in 16 goes through the real crictl (crictl inspectp -o json), found as
// the e2e tests find it (NRINET_CRICTL, or installed once into a shared
// cache directory; without it, gRPC only). Errors are expected
// while things are down; a worker backs off and tries again later. What a
// worker believes about its pods comes only from successful answers: a
// request that failed in transit (Unavailable, DeadlineExceeded) leaves
// the pod uncertain until a later answer (or a pod list after a restart)
// settles it, while a RunPodSandbox that failed with an answer from
// nrinetd must leave no pod. Each answer is checked on the spot against
// what the worker knows (a READY pod's addresses are those on eth0 in
// its namespace, a certainly READY pod does not become NOTREADY or vanish,
// a stopped pod has no namespace file).
//
// # Chaos
//
// Every 0.5 to 3 s the chaos loop picks one of: SIGKILL nrinetd, at a
// random moment, or 0 to 20 ms after a worker began a RunPodSandbox,
// StopPodSandbox, RemovePodSandbox or PodSandboxStatus, or again 0 to
// 300 ms after it was started (while it reconciles its store and launches
// its plugins); SIGKILL nri-podnet (nrinetd relaunches it), at a random
// moment, or 0 to 20 ms after a worker began a RunPodSandbox or
// StopPodSandbox, or twice, the second time 0 to 50 ms after nrinetd
// relaunched it (while it joins); SIGKILL 20-chaostag (the test starts
// it again after up to 2 s); or a graceful restart of nrinetd (SIGTERM).
// After each nrinetd kill or restart it runs a checkpoint.
//
// # Checkpoints
//
// With the workers quiesced (every request in flight finished):
//
//  1. nrinetd is running and nri-podnet has joined (NetworkReady), and
//     20-chaostag has joined unless the test killed it;
//  2. nrinetd is stopped with SIGTERM and exits 0, which shuts its plugins
//     down; no nri-podnet process is left (found by executable, then by
//     exact PID);
//  3. nri-podnet's IPAM database is opened: ipam Check is clean, its
//     owners are exactly the READY non-host-network pods, each with the
//     addresses its status reports;
//  4. nrinetd is started again; the pods it lists are the ones before the
//     stop, and agree with what the workers know (pods they were unsure
//     of are adopted or dropped);
//  5. every READY pod's CRI status addresses equal the global addresses of
//     eth0 in its network namespace (netlink), one IPv4 and one IPv6 from
//     the test's subnets (none for host-network pods), and no address is
//     held by two pods; its verbose network info has nri-podnet's host veth
//     and 20-chaostag's tag (a verbose status asks every joined plugin,
//     so the tag is there even for a pod created while 20-chaostag was
//     away, unless it is marked stale);
//  6. the namespace files in /run/netns are exactly those of the READY
//     pods, the veths on the test bridge exactly their host veths
//     (podnet.nrinet.io/host-veth), and no plugin process of an earlier
//     nrinetd is left.
//
// At the end the workers stop, a last checkpoint runs, every pod is
// removed, nrinetd and 20-chaostag are stopped, and then no namespace
// file, no veth on the bridge, no IPAM owner and no plugin process may be
// left, and neither nrinetd's log nor the plugin's may show a panic or a
// data race. Every violation is counted and reported with details, and
// fails the test; the report also gives the operations done (and per
// second), the errors by code, the kills of each kind and the restarts.
package chaos
