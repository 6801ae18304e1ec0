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
