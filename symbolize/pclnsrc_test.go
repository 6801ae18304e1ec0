package symbolize

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPclnFromFile checks the pclntab decoder reading its tables from the
// file (a Go binary whose DWARF answers) against the same decoder over
// the table held in memory: the same frames for every address sampled,
// and, once the names are read, no allocation per lookup. Not parallel:
// it counts the process's allocations.
func TestPclnFromFile(t *testing.T) {
	p := buildGoProg(t) // with DWARF
	b := mustOpenOpts(t, p, Options{NoDebugFile: true})
	g := b.loadGo()
	require.NotNil(t, g)
	require.NotNil(t, g.inline, "no inline tree located")
	require.False(t, g.inline.funcs.held(), "DWARF answers, yet .gopclntab is held")
	data, err := sectionData(g.sec)
	require.NoError(t, err)
	held := newGoInline(b.ef, memTab(data), false)
	require.NotNil(t, held)

	addrs := textAddrs(t, p, 3000)
	var fromFile, inMemory []Frame
	answered, inlined := 0, 0
	for _, a := range addrs {
		var ok1, ok2 bool
		fromFile, ok1 = g.inline.frames(b, a, fromFile[:0])
		inMemory, ok2 = held.frames(b, a, inMemory[:0])
		require.Equal(t, ok2, ok1, "%#x", a)
		require.True(t, slices.Equal(inMemory, fromFile), "%#x: from the file %v, in memory %v", a, fromFile, inMemory)
		if ok1 {
			answered++
			if len(fromFile) > 1 {
				inlined++
			}
		}
	}
	assert.Greater(t, answered, len(addrs)/2)
	assert.Positive(t, inlined, "no inlined frames read from the file")

	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		fromFile, _ = g.inline.frames(b, addrs[i%len(addrs)], fromFile[:0])
		i++
	})
	assert.Zero(t, allocs, "allocations per lookup from the file")
}
