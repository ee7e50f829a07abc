package netpol

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The directions, as [Count] and the deny log name them.
const (
	Ingress = "ingress"
	Egress  = "egress"
)

// Count is one of the table's named counters, as [Enforcer.Counters]
// reads it: the packets a policy's rules allowed in a direction (Policy
// set), or the packets no policy allowed to or from a pod (Pod set). Only
// the packets that open a connection meet the pods' chains (those of
// established and related connections are accepted before): a TCP SYN
// and its retransmissions, a UDP flow's packets until the first reply.
type Count struct {
	Policy    string // "namespace/name": the policy's allowed counter
	Pod       string // "namespace/name": the pod's denied counter
	Direction string // Ingress or Egress
	Packets   uint64
}

// Counters are the table's counters, read from the kernel.
type Counters struct {
	// Allowed has a Count for each policy and direction in which it
	// isolates a pod of the table, sorted by policy and direction: the
	// packets the policy's rules allowed there, counted for the first of
	// the pod's policies (by namespace/name) whose rule allows them.
	Allowed []Count
	// Denied has a Count for each isolated pod and direction, sorted by
	// pod and direction: the packets its chain dropped, no policy
	// allowing them.
	Denied []Count
	// Logging: the table logs denied packets ([WithLogDenied]); then
	// Unlogged counts the denied packets left unlogged for the rate
	// limit, and Logged and LogOverruns come from the [DenyLog] (the
	// lines it wrote, and the times the kernel found its socket full and
	// dropped messages).
	Logging     bool
	Unlogged    uint64
	Logged      uint64
	LogOverruns uint64
}

// Names of the table's named objects.
const (
	// counterUnlogged counts the denied packets over the log's rate.
	counterUnlogged = "denied-unlogged"
	// limitLog is the limit object of the deny log (rate over).
	limitLog = "log-denied"
)

// allowedCounter names the counter of a policy's rules in one direction:
// "allowed-in-" or "allowed-eg-" and the first 64 bits of the SHA-256 of
// the policy's "namespace/name", in hex.
func allowedCounter(policy string, ingress bool) string {
	sum := sha256.Sum256([]byte(policy))
	dir := "eg-"
	if ingress {
		dir = "in-"
	}
	return "allowed-" + dir + hex.EncodeToString(sum[:8])
}

// deniedCounter names the counter of a pod's chain's drop: "denied-" and
// the chain's name.
func deniedCounter(chain string) string { return "denied-" + chain }

// countIn is the statement that counts a packet in the named counter
// name: `counter name NAME`.
func countIn(name string) expr.Any {
	return &expr.Objref{Type: unix.NFT_OBJECT_COUNTER, Name: name}
}

// denyRules end a pod's chain: they drop what no rule before allowed,
// counting it in the counter denied. With ld, the packet is logged to
// ld's nflog group, prefixed with the chain's name (logPrefix), unless
// the log's rate is exceeded:
//
//	limit name "log-denied" counter name "denied-unlogged" counter name "denied-CHAIN" drop
//	log prefix "nrinet-netpol CHAIN" group G snaplen 128 counter name "denied-CHAIN" drop
//
// and without it:
//
//	counter name "denied-CHAIN" drop
func denyRules(chain, denied, comment string, ld *LogDenied) []rule {
	drop := &expr.Verdict{Kind: expr.VerdictDrop}
	if ld == nil {
		return []rule{{exprs: []expr.Any{countIn(denied), drop}, comment: comment}}
	}
	return []rule{
		{
			exprs: []expr.Any{
				&expr.Objref{Type: unix.NFT_OBJECT_LIMIT, Name: limitLog},
				countIn(counterUnlogged), countIn(denied), drop,
			},
			comment: comment + ": over the log's rate, not logged",
		},
		{
			exprs: []expr.Any{
				&expr.Log{Key: 1<<unix.NFTA_LOG_GROUP | 1<<unix.NFTA_LOG_PREFIX | 1<<unix.NFTA_LOG_SNAPLEN,
					Group: ld.Group, Data: []byte(logPrefix + chain), Snaplen: logSnaplen},
				countIn(denied), drop,
			},
			comment: comment + ": logged",
		},
	}
}

// counterNames are rs's counters' names, sorted.
func (rs *ruleset) counterNames() []string {
	names := make([]string, 0, len(rs.counters))
	for n := range rs.counters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// addObjects adds the named objects of rs that prev (nil: none) lacks to
// the batch: the counters, and the log's limit.
func (b *batch) addObjects(prev, rs *ruleset) {
	for _, name := range rs.counterNames() {
		if prev != nil {
			if _, ok := prev.counters[name]; ok {
				continue
			}
		}
		b.c.AddObj(&nftables.CounterObj{Table: b.t, Name: name})
		b.written++
	}
	if rs.logLimit != nil && (prev == nil || prev.logLimit == nil) {
		b.c.AddObj(&nftables.NamedObj{Table: b.t, Name: limitLog, Type: nftables.ObjTypeLimit, Obj: rs.logLimit})
		b.written++
	}
}

// deleteObjects deletes the named objects of prev that rs lacks (once no
// rule refers to them).
func (b *batch) deleteObjects(prev, rs *ruleset) {
	for _, name := range prev.counterNames() {
		if _, ok := rs.counters[name]; !ok {
			b.c.DeleteObject(&nftables.CounterObj{Table: b.t, Name: name})
			b.written++
		}
	}
	if prev.logLimit != nil && rs.logLimit == nil {
		b.c.DeleteObject(&nftables.NamedObj{Table: b.t, Name: limitLog, Type: nftables.ObjTypeLimit, Obj: prev.logLimit})
		b.written++
	}
}

// Counters reads the table's counters of the program of the last Sync
// from the kernel: a policy's or a pod's from the Sync that first wrote
// its rules until the one that removed them. They start again at 0 when
// the table is written whole (an Enforcer's first Sync, as when
// nri-podnet restarts, or one after a failed change). Before the first
// Sync there are none.
func (e *Enforcer) Counters() (Counters, error) {
	e.mu.Lock()
	rs := e.prev
	e.mu.Unlock()
	out := Counters{Logging: e.logDenied != nil, Logged: e.logged.Load(), LogOverruns: e.overruns.Load()}
	if rs == nil {
		return out, nil
	}
	c, err := e.conn()
	if err != nil {
		return out, err
	}
	// Named objects: the legacy types (CounterObj) cannot read the
	// limit object.
	objs, err := c.GetNamedObjects(table())
	if err != nil {
		return out, fmt.Errorf("netpol: reading the counters of table inet %s: %w", TableName, err)
	}
	for _, o := range objs {
		no, ok := o.(*nftables.NamedObj)
		if !ok || no.Type != nftables.ObjTypeCounter {
			continue
		}
		co, ok := no.Obj.(*expr.Counter)
		if !ok {
			continue
		}
		what, ok := rs.counters[no.Name]
		switch {
		case !ok:
		case no.Name == counterUnlogged:
			out.Unlogged = co.Packets
		case what.Policy != "":
			what.Packets = co.Packets
			out.Allowed = append(out.Allowed, what)
		case what.Pod != "":
			what.Packets = co.Packets
			out.Denied = append(out.Denied, what)
		}
	}
	slices.SortFunc(out.Allowed, func(a, b Count) int {
		return cmp.Or(cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Direction, b.Direction))
	})
	slices.SortFunc(out.Denied, func(a, b Count) int {
		return cmp.Or(cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.Direction, b.Direction))
	})
	return out, nil
}
