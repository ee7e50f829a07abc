// Package keylock serializes work per key (a pod's ID) without ordering
// different keys: the runtime's changes to one pod's network record, and
// nrinetd's changes to one sandbox. A key's mutex lives only while
// someone holds or waits for it.
package keylock
