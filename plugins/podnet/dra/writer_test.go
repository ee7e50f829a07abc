package dra

import (
	"slices"
	"strconv"
	"sync"
	"testing"
)

// The writer writes in the order of add, wait returns when all of it is
// written, and close writes what is still queued before it returns;
// after close, add drops.
func TestWriter(t *testing.T) {
	var mu sync.Mutex
	var got []string
	gate := make(chan struct{})
	w := newWriter(func(sw statusWrite) {
		<-gate // the first write holds the rest back
		mu.Lock()
		got = append(got, sw.uid)
		mu.Unlock()
	})
	var want []string
	for i := range 50 {
		w.add(statusWrite{uid: strconv.Itoa(i)})
		want = append(want, strconv.Itoa(i))
	}
	close(gate)
	w.wait()
	mu.Lock()
	if !slices.Equal(got, want) {
		t.Errorf("written %v; want %v", got, want)
	}
	got = nil
	mu.Unlock()
	w.add(statusWrite{uid: "last"})
	w.close()
	w.add(statusWrite{uid: "after close"})
	if !slices.Equal(got, []string{"last"}) {
		t.Errorf("written at close %v; want [last]", got)
	}
}
