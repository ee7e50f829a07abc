// Package nsconn is how nri-podnet's kernel agents (packages masq,
// netpol, hostport and portsec, each owning one nftables table, and the
// plugin's sysctls) reach a network namespace given as an open file
// descriptor, 0 meaning the process's own: an nftables connection in it
// ([NFTables]), and a function run on a thread in it ([Do]); the
// namespace an agent's WithNetNS option sets ([NetNS], which each agent
// embeds), and the removal of a table ([DeleteTable]).
package nsconn
