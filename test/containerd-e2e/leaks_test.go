package containerde2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nrinet/nrinet/internal/testutil"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The leak check (the scenario 5), run after every scenario by
// containerd's cleanup: once the pods are removed through CRI and
// containerd and the plugins have stopped, nothing of the instance may be
// left on the host. takeSnapshot lists, by exact name, what could be left
// (network namespaces, network interfaces, mounts, processes, cgroups,
// shim sockets in /run/containerd/s, CNI result caches in
// /var/lib/cni/results, host-local IPAM entries); a scope says which of
// those belong to one instance (its directory, its token's names, the pod
// and container IDs and network namespaces and host veths it saw). A leak
// is what the snapshot after has and the one before had not, and what the
// scope claims; it is reported and removed by exact name or PID. What the
// instance's own directory holds is ours by construction and is checked
// without a snapshot.

// Well-known places containerd and CNI write outside their configured
// directories.
const (
	netnsDir        = "/var/run/netns"
	runContainerdS  = "/run/containerd/s"
	cniResultsDir   = "/var/lib/cni/results"
	cniNetworksDir  = "/var/lib/cni/networks"
	sysClassNet     = "/sys/class/net"
	cgroupTopPrefix = "nrinet-ce2e-"
	// cgroupDefaultParent is where runc puts a pod that has no cgroup
	// parent, under containerd's CRI (cgroupfs driver).
	cgroupDefaultParent = "k8s.io"
)

// seen records what an instance created, as the test learns it.
type seen struct {
	mu    sync.Mutex // guards the fields below
	ids   []string   // pod sandbox and container IDs
	netns []string   // pods' network namespace paths
	veths []string   // host ends of the pods' veths
}

func (s *seen) add(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if !slices.Contains(s.ids, id) {
			s.ids = append(s.ids, id)
		}
	}
}

// idRE matches what looks like a sandbox or container ID: 64 hex digits.
var idRE = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// loggedIDs returns the IDs in containerd's log, in order (image digests
// among them, which match nothing of the host): the pods and containers
// of a test that did not report them, such as containerd's integration
// tests.
func loggedIDs(log string) []string {
	return slices.Compact(idRE.FindAllString(log, -1))
}

func (s *seen) addNetNS(path string) {
	if path == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.netns = append(s.netns, path)
}

func (s *seen) addVeths(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if !slices.Contains(s.veths, n) {
			s.veths = append(s.veths, n)
		}
	}
}

// An item is one thing on the host, named exactly.
type item struct {
	kind string // see the kind constants
	name string // path, interface name, or "PID cmdline"
	pid  int    // processes only
	// cgroups lists a process's cgroup paths (/proc/PID/cgroup).
	cgroups string
	// master is the bridge a network interface is attached to.
	master string
}

// Item kinds, in the order leaks are removed.
const (
	kindProcess   = "process"
	kindMount     = "mount"
	kindNetNS     = "netns"
	kindLink      = "link"
	kindShimSock  = "shim socket"
	kindCNIResult = "CNI result cache"
	kindIPAM      = "IPAM entry"
	kindCgroup    = "cgroup"
)

// kindRank is a kind's place in the removal order.
func kindRank(kind string) int {
	return slices.Index([]string{kindProcess, kindMount, kindNetNS, kindLink, kindShimSock, kindCNIResult, kindIPAM, kindCgroup}, kind)
}

func (i item) key() string { return i.kind + " " + i.name }

// snapshot is everything takeSnapshot found, by key.
type snapshot map[string]item

// takeSnapshot lists the host's network namespaces (/var/run/netns),
// network interfaces, mounts, processes, cgroups under the suite's cgroup
// parents, /run/containerd/s, /var/lib/cni/results and host-local's
// default state (/var/lib/cni/networks).
func takeSnapshot() snapshot {
	s := snapshot{}
	add := func(i item) { s[i.key()] = i }
	for _, n := range readDirNames(netnsDir) {
		add(item{kind: kindNetNS, name: filepath.Join(netnsDir, n)})
	}
	for _, n := range readDirNames(sysClassNet) {
		master, _ := os.Readlink(filepath.Join(sysClassNet, n, "master"))
		add(item{kind: kindLink, name: n, master: filepath.Base(master)})
	}
	for _, m := range mountPoints() {
		add(item{kind: kindMount, name: m})
	}
	for _, n := range readDirNames("/proc") {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", n, "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue // gone, or a kernel thread
		}
		cg, _ := os.ReadFile(filepath.Join("/proc", n, "cgroup"))
		args := strings.TrimRight(strings.ReplaceAll(string(cmdline), "\x00", " "), " ")
		add(item{kind: kindProcess, name: n + " " + args, pid: pid, cgroups: string(cg)})
	}
	for _, h := range cgroupHierarchies() {
		// Pods without a cgroup parent (containerd's integration tests
		// set none) get containerd's default, /k8s.io/<ID>.
		for _, n := range readDirNames(filepath.Join(h, cgroupDefaultParent)) {
			if idRE.MatchString(n) {
				add(item{kind: kindCgroup, name: filepath.Join(h, cgroupDefaultParent, n)})
			}
		}
		for _, top := range readDirNames(h) {
			if !strings.HasPrefix(top, cgroupTopPrefix) {
				continue
			}
			filepath.WalkDir(filepath.Join(h, top), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					add(item{kind: kindCgroup, name: p})
				}
				return nil
			})
		}
	}
	for _, n := range readDirNames(runContainerdS) {
		add(item{kind: kindShimSock, name: filepath.Join(runContainerdS, n)})
	}
	for _, n := range readDirNames(cniResultsDir) {
		add(item{kind: kindCNIResult, name: filepath.Join(cniResultsDir, n)})
	}
	for _, net := range readDirNames(cniNetworksDir) {
		add(item{kind: kindIPAM, name: filepath.Join(cniNetworksDir, net)})
	}
	return s
}

// readDirNames lists a directory's entries; a missing directory has none.
func readDirNames(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

// mountinfo returns the fields of /proc/self/mountinfo's lines: the
// mount point (unescaped) and the filesystem type.
func mountinfo() (points, types []string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		points = append(points, unescapeMount(fields[4]))
		types = append(types, fields[sep+1])
	}
	return points, types
}

// mountPoints lists the mount points of the test's mount namespace (the
// host's: containerd and the shims mount there).
func mountPoints() []string {
	points, _ := mountinfo()
	return points
}

// cgroupHierarchies lists the mounted cgroup hierarchies (v1 controllers,
// or the v2 unified one).
func cgroupHierarchies() []string {
	points, types := mountinfo()
	var out []string
	for i, p := range points {
		if types[i] == "cgroup" || types[i] == "cgroup2" {
			out = append(out, p)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// scope says what on the host belongs to one containerd instance.
type scope struct {
	// dir is the instance's directory: every mount under it, every process
	// whose command line names it is the instance's.
	dir string
	// sock is containerd's gRPC address, from which the shims' socket
	// names in /run/containerd/s are derived.
	sock string
	// cgroupParent is the pods' cgroup parent.
	cgroupParent string
	// bridges are the bridges the instance's pods are attached to: the
	// CNI bridge, a network plugin's bridge. They outlive containerd by
	// design (removeOwn deletes them).
	bridges []string
	// veths are the host ends of the pods' veths.
	veths []string
	// cniNets are the CNI networks' names: their result caches are named
	// "<network>-<sandbox ID>-<interface>".
	cniNets []string
	// ipamDirs are host-local's state directories of the networks (under
	// dir).
	ipamDirs []string
	// ids, netns are the pod sandbox and container IDs and the pods'
	// network namespaces the instance created.
	ids, netns []string
}

// scope returns the instance's scope with what it has seen so far.
func (c *containerd) scope() scope {
	c.seen.mu.Lock()
	defer c.seen.mu.Unlock()
	s := scope{
		dir: c.dir, sock: c.sock, cgroupParent: c.cgroupParent,
		ids: slices.Clone(c.seen.ids), netns: slices.Clone(c.seen.netns),
		veths: slices.Clone(c.seen.veths), bridges: slices.Clone(c.extraBridges),
	}
	nets := slices.Clone(c.pluginNets)
	if c.cni != nil {
		nets = append(nets, c.cni)
	}
	for _, n := range nets {
		s.bridges = append(s.bridges, n.bridge)
		s.cniNets = append(s.cniNets, n.name)
		s.ipamDirs = append(s.ipamDirs, filepath.Join(n.dataDir, n.name))
	}
	return s
}

// shimSockets are the socket names a shim of this instance would create
// in /run/containerd/s for one of the IDs: the hex SHA-256 of
// "<gRPC address>/k8s.io/<ID>" (and of ".../debug").
func (s scope) shimSockets() []string {
	var out []string
	for _, id := range s.ids {
		for _, suffix := range []string{"", "/debug"} {
			sum := sha256.Sum256([]byte(filepath.Join(s.sock, "k8s.io", id) + suffix))
			out = append(out, filepath.Join(runContainerdS, fmt.Sprintf("%x", sum)))
		}
	}
	return out
}

// podsScope is the scope of some of the instance's pods only (see
// checkRemoved): their sandbox and container IDs, network namespaces and
// host veths; no directory, cgroup parent, bridge or network of the
// instance, which its other pods share.
func podsScope(pods ...*pod) scope {
	var s scope
	for _, p := range pods {
		s.ids = append(s.ids, p.id)
		if p.ctrID != "" {
			s.ids = append(s.ids, p.ctrID)
		}
		if p.netns != "" {
			s.netns = append(s.netns, p.netns)
		}
		s.veths = append(s.veths, p.veths...)
	}
	return s
}

// owns reports whether an item belongs to the instance (or to the pods
// of a podsScope: a scope without a directory or a cgroup parent claims
// nothing by them).
func (s scope) owns(i item) bool {
	under := func(p string) bool { return s.dir != "" && (p == s.dir || strings.HasPrefix(p, s.dir+"/")) }
	switch i.kind {
	case kindNetNS:
		return slices.Contains(s.netns, i.name) || under(i.name)
	case kindLink:
		// A bridge is not a leak (removeOwn checks and deletes it); what
		// is attached to one is.
		return slices.Contains(s.veths, i.name) || (i.master != "" && slices.Contains(s.bridges, i.master))
	case kindMount:
		// dir itself may be a mount of the instance's own (shareMount),
		// which removeOwn removes. A pod's mounts (rootfs, shm) are named
		// after its IDs.
		return (under(i.name) && i.name != s.dir) ||
			(s.dir == "" && slices.ContainsFunc(s.ids, func(id string) bool { return strings.Contains(i.name, "/"+id+"/") || strings.HasSuffix(i.name, "/"+id) }))
	case kindProcess:
		return (s.dir != "" && strings.Contains(i.name, s.dir+"/")) ||
			(s.cgroupParent != "" && strings.Contains(i.cgroups, s.cgroupParent+"/")) ||
			slices.ContainsFunc(s.ids, func(id string) bool { return strings.Contains(i.cgroups, "/"+id) })
	case kindCgroup:
		_, rel, ok := strings.Cut(i.name, "/"+strings.TrimPrefix(s.cgroupParent, "/")+"/")
		return (s.cgroupParent != "" && ok && rel != "") || slices.Contains(s.ids, filepath.Base(i.name))
	case kindShimSock:
		return slices.Contains(s.shimSockets(), i.name)
	case kindCNIResult:
		base := filepath.Base(i.name)
		if slices.ContainsFunc(s.cniNets, func(n string) bool { return strings.HasPrefix(base, n+"-") }) {
			return true
		}
		return slices.ContainsFunc(s.ids, func(id string) bool { return strings.Contains(base, id) })
	case kindIPAM:
		return slices.Contains(s.cniNets, filepath.Base(i.name))
	}
	return false
}

// A leak is an item of the instance that is still there.
type leak struct{ item }

func (l leak) String() string { return l.kind + " " + l.name }

// leaks compares the snapshots and lists what the instance left behind,
// and what is left in its own directory: shim sockets in its socket
// directory, host-local entries (files other than "lock" and
// "last_reserved_ip.*"), network namespaces in the CRI state's netns
// directory. They come in the order remove must run in.
func (s scope) leaks(before, after snapshot) []leak {
	var out []leak
	// Network namespaces the CRI plugin bind-mounted in its state
	// directory (netns_mounts_under_state_dir): reported as namespaces,
	// not as mounts; removing one unmounts it. A podsScope has only its
	// pods' own.
	var netnsUnderState []string
	if s.dir != "" {
		netnsUnderState, _ = filepath.Glob(filepath.Join(s.dir, "state", "*", "netns", "*"))
	} else {
		for _, p := range s.netns {
			if _, err := os.Stat(p); err == nil && !strings.HasPrefix(p, netnsDir+"/") {
				netnsUnderState = append(netnsUnderState, p)
			}
		}
	}
	for _, p := range netnsUnderState {
		out = append(out, leak{item{kind: kindNetNS, name: p}})
	}
	for k, i := range after {
		if _, had := before[k]; had || !s.owns(i) {
			continue
		}
		if i.kind == kindMount && slices.Contains(netnsUnderState, i.name) {
			continue
		}
		out = append(out, leak{i})
	}
	if s.dir != "" {
		for _, n := range readDirNames(filepath.Join(s.dir, "s")) {
			out = append(out, leak{item{kind: kindShimSock, name: filepath.Join(s.dir, "s", n)}})
		}
	}
	for _, d := range s.ipamDirs {
		for _, n := range readDirNames(d) {
			if n != "lock" && !strings.HasPrefix(n, "last_reserved_ip.") {
				out = append(out, leak{item{kind: kindIPAM, name: filepath.Join(d, n)}})
			}
		}
	}
	slices.SortFunc(out, func(a, b leak) int {
		if d := kindRank(a.kind) - kindRank(b.kind); d != 0 {
			return d
		}
		// Deeper paths first: nested mounts and cgroups.
		if d := strings.Count(b.name, "/") - strings.Count(a.name, "/"); d != 0 {
			return d
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

// remove removes a leak by its exact name or PID.
func (l leak) remove() error {
	switch l.kind {
	case kindProcess:
		// The PID is checked to be the same process (command line) first.
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", l.pid))
		if err != nil {
			return nil // gone
		}
		if !strings.HasPrefix(l.name, fmt.Sprintf("%d %s", l.pid, strings.TrimRight(strings.ReplaceAll(string(cmdline), "\x00", " "), " "))) {
			return nil // the PID was reused
		}
		if err := syscall.Kill(l.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		return waitFor(fmt.Sprintf("PID %d to exit after SIGKILL", l.pid), func() (bool, error) {
			return exited(l.pid), nil
		})
	case kindMount:
		return unmount(l.name)
	case kindNetNS:
		if err := unmount(l.name); err != nil {
			return err
		}
		if err := os.Remove(l.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	case kindLink:
		// A veth goes away with its other end's namespace, maybe just now.
		out, err := exec.Command("ip", "link", "del", "dev", l.name).CombinedOutput()
		if _, serr := os.Stat(filepath.Join(sysClassNet, l.name)); err != nil && serr == nil {
			return fmt.Errorf("ip link del %s: %v: %s", l.name, err, out)
		}
		return nil
	case kindShimSock, kindCNIResult, kindIPAM:
		return os.RemoveAll(l.name)
	case kindCgroup:
		// A cgroup whose last process was just killed may be busy for a
		// moment.
		return waitFor("rmdir "+l.name, func() (bool, error) {
			err := syscall.Rmdir(l.name)
			switch {
			case err == nil, errors.Is(err, syscall.ENOENT):
				return true, nil
			case errors.Is(err, syscall.EBUSY):
				return false, nil
			}
			return false, err
		})
	}
	return fmt.Errorf("unknown kind %q", l.kind)
}

// removeTimeout bounds the wait for a killed process or a busy cgroup.
const removeTimeout = 5 * time.Second

// waitFor polls cond until it is done or fails, for removeTimeout.
func waitFor(what string, cond func() (bool, error)) error {
	return testutil.Poll(removeTimeout, 10*time.Millisecond, func() error {
		done, err := cond()
		switch {
		case err != nil:
			return testutil.Abort(err)
		case !done:
			return errors.New("waiting for " + what)
		}
		return nil
	})
}

// exited reports whether a process is gone or a zombie (which holds no
// resource but its PID, until its new parent reaps it).
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// "PID (comm) STATE ...": comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z'
}

// unmount detaches a mount; one that is not mounted (any more) is fine.
func unmount(path string) error {
	err := syscall.Unmount(path, syscall.MNT_DETACH)
	if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", path, err)
}

// removeOwn removes what the instance made on purpose and that outlives
// containerd by design: the CNI bridge (the bridge plugin never deletes
// it), which must have no ports left, and the pods' cgroup parent in every
// hierarchy (runc creates it and never removes it), which must have no
// children left. Anything else is a leak.
func (s scope) removeOwn() []error {
	var errs []error
	for _, l := range s.bridges {
		if _, err := os.Stat(filepath.Join(sysClassNet, l)); err != nil {
			continue
		}
		if ports := readDirNames(filepath.Join(sysClassNet, l, "brif")); len(ports) > 0 {
			errs = append(errs, fmt.Errorf("left behind: ports %v on bridge %s", ports, l))
		}
		if out, err := exec.Command("ip", "link", "del", "dev", l).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link del %s: %v: %s", l, err, out))
		}
	}
	if isMountPoint(s.dir) {
		if err := syscall.Unmount(s.dir, 0); err != nil {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", s.dir, err))
		}
	}
	for _, h := range cgroupHierarchies() {
		p := filepath.Join(h, s.cgroupParent)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := syscall.Rmdir(p); err != nil {
			errs = append(errs, fmt.Errorf("removing cgroup parent %s: %v", p, err))
		}
	}
	return errs
}

// shareMount makes dir a mount of its own (a bind mount onto itself) and
// shared: mounts made under it later propagate to the mount namespaces
// that copy it afterwards (as slaves).
func shareMount(dir string) error {
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mounting %s onto itself: %w", dir, err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_SHARED, ""); err != nil {
		return fmt.Errorf("making %s a shared mount: %w", dir, err)
	}
	return nil
}

// isMountPoint reports whether path is a mount point.
func isMountPoint(path string) bool {
	return slices.Contains(mountPoints(), path)
}

// bridgePorts lists the interfaces enslaved to a bridge (none if there is
// no such bridge).
func bridgePorts(t testing.TB, bridge string) []string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sysClassNet, bridge)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	out, err := exec.Command("ip", "-j", "link", "show", "master", bridge).Output()
	if err != nil {
		t.Fatalf("ip -j link show master %s: %v", bridge, err)
	}
	var links []struct {
		Name string `json:"ifname"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		t.Fatalf("ip -j link show master %s: %v\n%s", bridge, err, out)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Name)
	}
	return names
}
