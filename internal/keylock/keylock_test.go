package keylock_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/nrinet/nrinet/internal/keylock"
)

// TestLocks_SameKeySerializes: holders of one key never overlap, and
// every one gets its turn; afterwards no entry is left.
func TestLocks_SameKeySerializes(t *testing.T) {
	var l keylock.Locks
	var wg sync.WaitGroup
	var inside, most, total int
	var mu sync.Mutex
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := l.Lock("pod")
			mu.Lock()
			inside++
			total++
			most = max(most, inside)
			mu.Unlock()
			runtime.Gosched() // let another goroutine in, were the lock broken
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
		}()
	}
	wg.Wait()
	if most != 1 || total != 50 {
		t.Errorf("at most %d holders at once (want 1), %d turns (want 50)", most, total)
	}
	if n := l.Len(); n != 0 {
		t.Errorf("%d keys left after every unlock", n)
	}
}

// TestLocks_KeysAreIndependent: a held key does not block another.
func TestLocks_KeysAreIndependent(t *testing.T) {
	var l keylock.Locks
	unlockA := l.Lock("a")
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Lock("b")()
	}()
	<-done // would hang if "b" waited for "a"
	if n := l.Len(); n != 1 {
		t.Errorf("Len = %d while a is held, want 1", n)
	}
	unlockA()
	if n := l.Len(); n != 0 {
		t.Errorf("Len = %d after unlocking, want 0", n)
	}
}

// Two changes to one pod run one after the other; another pod's does not
// wait for them.
func ExampleLocks() {
	var pods keylock.Locks
	unlock := pods.Lock("pod-1")
	pods.Lock("pod-2")() // not held up by pod-1
	fmt.Println("keys held:", pods.Len())
	unlock()
	fmt.Println("keys held:", pods.Len())
	// Output:
	// keys held: 1
	// keys held: 0
}
