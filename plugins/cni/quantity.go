package cni

import (
	"errors"
	"math/big"
	"strconv"
	"strings"
)

// Errors of parseQuantity, worded as Kubernetes' (resource.ParseQuantity).
var (
	errQuantityFormat  = errors.New("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
	errQuantitySuffix  = errors.New("unable to parse quantity's suffix")
	errBandwidthSmall  = errors.New("resource is unreasonably small (< 1kbit)")
	errBandwidthLarge  = errors.New("resource is unreasonably large (> 1Pbit)")
	minBandwidth       = big.NewInt(1_000)
	maxBandwidth       = big.NewInt(1_000_000_000_000_000)
	decimalSuffixExps  = map[string]int{"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
	binarySuffixShifts = map[string]uint{"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
)

// maxDecimalExponent bounds the exponents parseQuantity computes with:
// anything beyond is far outside the bandwidth limits either way.
const maxDecimalExponent = 40

// parseBandwidth reads a bandwidth annotation as containerd does
// (internal/cri/bandwidth, ExtractPodBandwidthResources): a Kubernetes
// quantity in bits per second, rounded up to a whole number, between 1k
// and 1P. Quantities too large for an int64, which containerd reads
// wrongly, are too large here.
func parseBandwidth(s string) (uint64, error) {
	q, err := parseQuantity(s)
	if err != nil {
		return 0, err
	}
	// Quantity.Value rounds up.
	v := new(big.Int).Quo(q.Num(), q.Denom())
	if q.Sign() > 0 && !q.IsInt() {
		v.Add(v, big.NewInt(1))
	}
	switch {
	case v.Cmp(minBandwidth) < 0:
		return 0, errBandwidthSmall
	case v.Cmp(maxBandwidth) > 0:
		return 0, errBandwidthLarge
	}
	return v.Uint64(), nil
}

// parseQuantity parses a Kubernetes quantity (resource.ParseQuantity's
// grammar): an optional sign, digits with an optional fraction, and a
// suffix: a decimal SI one (n u m k M G T P E, or none), a binary SI one
// (Ki Mi Gi Ti Pi Ei), or a decimal exponent (e3, E-2). The value is exact.
func parseQuantity(s string) (*big.Rat, error) {
	if s == "" {
		return nil, errQuantityFormat
	}
	pos := 0
	neg := false
	switch s[0] {
	case '-':
		neg, pos = true, 1
	case '+':
		pos = 1
	}
	digits := func() string {
		start := pos
		for pos < len(s) && s[pos] >= '0' && s[pos] <= '9' {
			pos++
		}
		return s[start:pos]
	}
	num := digits()
	var frac string
	if pos < len(s) && s[pos] == '.' {
		pos++
		frac = digits()
	}
	suffix := s[pos:]
	// The suffix: letters, then an optional sign and digits, to the end.
	i := 0
	for i < len(suffix) && strings.ContainsRune("eEinumkKMGTP", rune(suffix[i])) {
		i++
	}
	if i < len(suffix) && (suffix[i] == '-' || suffix[i] == '+') {
		i++
	}
	for i < len(suffix) && suffix[i] >= '0' && suffix[i] <= '9' {
		i++
	}
	if i < len(suffix) {
		return nil, errQuantityFormat
	}

	v, ok := new(big.Rat).SetString("0" + num + "." + frac + "0")
	if !ok {
		return nil, errQuantityFormat
	}
	if exp, ok := decimalSuffixExps[suffix]; ok {
		v.Mul(v, pow10(exp))
	} else if shift, ok := binarySuffixShifts[suffix]; ok {
		v.Mul(v, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), shift)))
	} else if len(suffix) > 1 && (suffix[0] == 'e' || suffix[0] == 'E') {
		exp, err := strconv.ParseInt(suffix[1:], 10, 64)
		if err != nil {
			return nil, errQuantitySuffix
		}
		exp = max(min(exp, maxDecimalExponent), -maxDecimalExponent)
		v.Mul(v, pow10(int(exp)))
	} else {
		return nil, errQuantitySuffix
	}
	if neg {
		v.Neg(v)
	}
	return v, nil
}

// pow10 returns 10^exp.
func pow10(exp int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
	if exp < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), p)
	}
	return new(big.Rat).SetInt(p)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
