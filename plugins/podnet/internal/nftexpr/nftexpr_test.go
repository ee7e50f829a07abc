package nftexpr

import "testing"

func TestAddrField(t *testing.T) {
	for _, tc := range []struct {
		v6, dst bool
		off, n  uint32
	}{{false, false, 12, 4}, {false, true, 16, 4}, {true, false, 8, 16}, {true, true, 24, 16}} {
		if off, n := AddrField(tc.v6, tc.dst); off != tc.off || n != tc.n {
			t.Errorf("AddrField(%v, %v) = %d, %d; want %d, %d", tc.v6, tc.dst, off, n, tc.off, tc.n)
		}
	}
}
