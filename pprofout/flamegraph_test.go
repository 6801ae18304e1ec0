package pprofout

import (
	"strconv"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
)

// The flame graph of go tool pprof's web UI draws the mismatched library:
// the stacks whose leaf is its label weigh its share of the period, not
// the caller's own time.
func TestPprofFlameGraphKeepsUntrustedWeight(t *testing.T) {
	if testing.Short() {
		t.Skip("starts go tool pprof's web server")
	}
	res, lib, file := mismatchedProfile(t)

	st := fixtures.PprofFlameGraph(t, file)
	leaf, through := st.Weight("[mismatch] libhot.so")
	// Every sample of the fixture has the period 1001001 ns.
	assert.Equal(t, int64(res.Samples)*1001001, st.Total)
	assert.Equal(t, int64(lib.HitsLeaf)*1001001, leaf, "leaf period of the library in the flame graph")
	assert.Equal(t, int64(lib.HitsAny)*1001001, through, "period of the stacks through the library")
	t.Logf("flame graph: %s has %s of %d ns at the leaf", "[mismatch] libhot.so", strconv.FormatInt(leaf, 10), st.Total)
}
