package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestLeakedNetNS: a namespace made after before and kept is a leak; one
// that goes within the grace is not, nor is one that was there before.
func TestLeakedNetNS(t *testing.T) {
	SkipUnlessRoot(t)
	prefix := fmt.Sprintf("nrleak%d-", os.Getpid())
	pattern := prefix + "*"
	old := NewNetNS(t, prefix+"old")
	before := NetNSNames(pattern)
	if !slices.Contains(before, old) {
		t.Fatalf("NetNSNames(%q) = %q, want %s in it", pattern, before, old)
	}
	if got := LeakedNetNS(pattern, before, time.Second); len(got) != 0 {
		t.Errorf("nothing new: LeakedNetNS = %q", got)
	}

	kept := NewNetNS(t, prefix+"kept")
	NewNetNS(t, prefix+"gone")
	// Another test's pod, going while LeakedNetNS looks, before or after
	// its first look: not a leak either way.
	deleted := make(chan struct{})
	go func() {
		defer close(deleted)
		DeleteNetNS(prefix + "gone")
	}()
	got := LeakedNetNS(pattern, before, 2*time.Second)
	<-deleted
	if want := []string{kept}; !slices.Equal(got, want) {
		t.Errorf("LeakedNetNS = %q, want %q", got, want)
	}
	if filepath.Dir(kept) != NetNSDir {
		t.Errorf("NewNetNS's path %s is not under %s", kept, NetNSDir)
	}
}
