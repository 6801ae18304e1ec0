package check

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The executable segments are read on the first ExecSegment call for a
// DSO, once, and not by the analysis: check, top and script never ask, so
// they do not pay an open per binary for pprof's sake.
func TestExecSegmentLazy(t *testing.T) {
	t.Parallel()
	res, err := Analyze(context.Background(), Path("../testdata/perf/cshared-fp.data"), withSystemSymbols(Options{Lookup: isolated(fixtureCache(t))}))
	require.NoError(t, err)
	lib := dsoNamed(t, res, "libhot.so")
	require.Equal(t, Verified, lib.Verdict)
	require.Equal(t, "perf-cache", lib.Source)
	c := countOpens(t, lib.FoundPath)
	var off uint64
	for _, l := range res.Locations {
		if l.DSO == lib {
			off = l.Offset
			break
		}
	}
	_, ok := res.ExecSegment(lib, off)
	assert.True(t, ok)
	assert.Equal(t, 1, c.opens(t), "the first call reads the binary")
	_, ok = res.ExecSegment(lib, off)
	assert.True(t, ok)
	assert.Zero(t, c.opens(t), "the segments are kept")
}
