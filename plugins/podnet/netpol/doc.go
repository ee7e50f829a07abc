// Package netpol enforces Kubernetes NetworkPolicies (networking.k8s.io/v1)
// for the pods of one node, compiled into nftables rules and sets that the
// kernel evaluates on its own: no packet goes to userspace (this design
// needs neither the nftables queue expression nor iptables).
//
// [Compile] turns the policies, the namespaces and every known pod (the
// node's own, marked Local, and the cluster's other pods with their
// addresses, which are the policies' peers) into a [Program]: for each
// local pod that some policy selects, the rules of each direction it is
// isolated in. Its documentation states the API semantics it follows.
//
// An [Enforcer] writes a Program as one table of family inet,
// [TableName] ("nrinet-podnet-netpol"), through
// [github.com/google/nftables] (netlink, no nft binary):
//
//	table inet nrinet-podnet-netpol
//	  chain forward   type filter hook forward priority filter; policy accept
//	    ct state established,related accept
//	    meta nfproto ipv6 icmpv6 type 133-137 accept   neighbour discovery, IPv6's ARP
//	    meta nfproto ipv4 ip saddr vmap @egress-v4     pod address: jump eg-ID
//	    meta nfproto ipv6 ip6 saddr vmap @egress-v6
//	    meta nfproto ipv4 ip daddr vmap @ingress-v4    pod address: jump in-ID
//	    meta nfproto ipv6 ip6 daddr vmap @ingress-v6
//	  chain eg-ID     to the pod itself: return; per allowed peer set and port: counter name allowed-eg-P return; then counter name denied-eg-ID drop
//	  chain in-ID     from the pod itself: accept; per allowed peer set and port: counter name allowed-in-P accept; then counter name denied-in-ID drop
//	  set in-ID-J-v4, in-ID-J-v6, eg-ID-J-v4, ...  the peers of rule J, interval sets of addresses
//	  counter allowed-in-P, allowed-eg-P  per policy and direction (P: its name hashed)
//	  counter denied-in-ID, denied-eg-ID  per pod chain
//
// ID is the pod's: 16 hex digits of the SHA-256 of its "namespace/name",
// the same in every program while the pod lives.
//
// The forward hook sees the traffic a pod sends or receives through the
// node: routed traffic (to and from other nodes and outside), and traffic
// between two pods of one bridge when the bridge passes bridged packets to
// netfilter (nri-podnet turns the bridge's nf_call_iptables and
// nf_call_ip6tables on). Traffic between a pod and its own node (the
// input and output hooks) is never filtered, as the NetworkPolicy API
// lets the node reach its pods. A connection the rules allowed stays
// allowed (conntrack's established state) after a policy change; a new
// connection meets the rules in force when its first packet passes.
//
// Every Sync is one nftables transaction: a packet meets the old rules or
// the new ones, so a change never opens a window in which a denied
// connection can start. An Enforcer's first Sync deletes and writes the
// whole table in one batch; later ones change only what differs from the
// program before (the chains of the pods whose rules changed, flushed and
// written again; the intervals of addresses that left or joined a set,
// deleted or added; the verdict maps' elements of pods that came or went), and write
// nothing when nothing differs. A change that fails (someone deleted or
// changed the table by hand) is retried as a whole write at once. A table
// changed by hand without a change of the program stays so until the
// program next changes or nri-podnet restarts. Every rule carries a comment naming its
// pod, direction and policy; [Enforcer.Rules] reads them back and `nft
// list table inet nrinet-podnet-netpol` shows them.
//
// # Counters and the deny log
//
// The named counters count the packets that reach the pods' chains, the
// first packets of new connections only: per policy and direction, those
// its rules allowed; per isolated pod and direction, those dropped
// because no policy allows them. [Enforcer.Counters] reads them from the
// kernel. With [WithLogDenied], each chain's drop is preceded by an nflog
// statement under a node-wide rate limit (nft's limit, a named object),
// and a [DenyLog] ([Enforcer.OpenDenyLog]) reads the group and writes a
// line per denied packet naming its pod and the policies isolating it.
package netpol
