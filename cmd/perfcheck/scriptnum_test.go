package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendHex16: appendHex16 prints what printf's "%16x" prints, after
// what b holds, for the values at the edges of each digit count and
// random ones.
func TestAppendHex16(t *testing.T) {
	t.Parallel()
	vals := []uint64{0, 1, 0xf, 0x10, math.MaxUint64}
	for i := range 64 {
		vals = append(vals, 1<<i, 1<<i-1)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		vals = append(vals, rng.Uint64()>>rng.IntN(64))
	}
	for _, v := range vals {
		require.Equal(t, fmt.Sprintf("x%16x", v), string(appendHex16([]byte("x"), v)), "%#x", v)
	}
}

// TestNumberFormatters: the script format's number formatters print what
// printf prints ("%*d", "%*x", "%0*d", the time's "%12s" of
// "%lu.%06lu"), for the values at the edges of each digit count, random
// ones and the extremes.
func TestNumberFormatters(t *testing.T) {
	t.Parallel()
	vals := []uint64{0, 1, 9, 10, 99, 100, math.MaxUint64, math.MaxInt64, 1 << 63}
	for i := range 64 {
		vals = append(vals, 1<<i, 1<<i-1, 1<<i+1)
	}
	p := uint64(1)
	for range 19 {
		p *= 10
		vals = append(vals, p-1, p, p+1)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		vals = append(vals, rng.Uint64()>>rng.IntN(64))
	}
	for _, v := range vals {
		for _, w := range []int{0, 1, 5, 10, 16, 40} {
			require.Equal(t, fmt.Sprintf("x%*d", w, v), string(appendUintPadLeft([]byte("x"), v, 10, w)), "%d %d", v, w)
			require.Equal(t, fmt.Sprintf("x%*x", w, v), string(appendUintPadLeft([]byte("x"), v, 16, w)), "%x %d", v, w)
			require.Equal(t, fmt.Sprintf("x%0*d", w, v), string(appendZeroPadded([]byte("x"), v, w)), "%d %d", v, w)
			i := int64(v)
			require.Equal(t, fmt.Sprintf("x%*d", w, i), string(appendIntPadLeft([]byte("x"), i, w)), "%d %d", i, w)
		}
	}
	for _, v := range []int64{math.MinInt64, -1, -12345, math.MinInt32} {
		require.Equal(t, fmt.Sprintf("%5d", v), string(appendIntPadLeft(nil, v, 5)))
	}
}
