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
//	    meta nfproto ipv4 ip saddr vmap @egress-v4     pod address: jump eg-N
//	    meta nfproto ipv6 ip6 saddr vmap @egress-v6
//	    meta nfproto ipv4 ip daddr vmap @ingress-v4    pod address: jump in-N
//	    meta nfproto ipv6 ip6 daddr vmap @ingress-v6
//	  chain eg-N      to the pod itself: return; per allowed peer set and port: return; then drop
//	  chain in-N      from the pod itself: accept; per allowed peer set and port: accept; then drop
//	  set in-N-J-v4, in-N-J-v6, eg-N-J-v4, ...    the peers of rule J, interval sets of addresses
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
// Every Apply replaces the whole table in one nftables transaction (the
// table deleted and written again in one batch): a packet meets the old
// rules or the new ones, so a change never opens a window in which a
// denied connection can start. Every rule carries a comment naming its
// pod, direction and policy; [Enforcer.Rules] reads them back and `nft
// list table inet nrinet-podnet-netpol` shows them.
package netpol
