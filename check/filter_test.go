package check

import (
	"context"
	"testing"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A filter applies at the sample, before anything is counted: the report,
// the aggregates and the kept samples hold the kept samples only, and the
// filters of one recording's two threads add up to the whole.
func TestFilterBeforeAggregation(t *testing.T) {
	t.Parallel()
	analyze := func(f Filter, replay bool) *Result {
		t.Helper()
		opts := Options{NoSymbols: true, Replay: replay, Filter: f,
			Lookup: buildidcache.Options{BuildIDDir: t.TempDir(), DebugDirs: []string{}, DebuginfodURLs: []string{}}}
		res, err := Analyze(context.Background(), Path("../testdata/perf/threads.data"), opts)
		require.NoError(t, err)
		return res
	}
	all := analyze(Filter{}, false)
	total := all.Report().Samples
	require.NotZero(t, total)
	var sum uint64
	for _, tid := range []uint32{7524, 7527} {
		res := analyze(Filter{TIDs: []uint32{tid}}, false)
		n := res.Report().Samples
		assert.NotZero(t, n, "tid %d", tid)
		sum += n
		var aggs, kept uint64
		for _, ag := range res.Aggregates() {
			assert.Equal(t, tid, ag.TID)
			aggs += ag.Samples
		}
		replay := analyze(Filter{TIDs: []uint32{tid}}, true)
		assert.Equal(t, n, replay.Report().Samples)
		require.NoError(t, replay.EachSample(context.Background(), func(s *Sample) error {
			assert.Equal(t, tid, s.TID)
			kept++
			return nil
		}))
		assert.Equal(t, n, aggs)
		assert.Equal(t, n, kept)
	}
	assert.Equal(t, total, sum)
	assert.Zero(t, analyze(Filter{Comms: []string{"nosuchcomm"}}, true).Report().Samples)
}

// perf's --time forms, as perf_time__parse_for_ranges reads them.
func TestParseSecNsec(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{"": 0, "367": 367e9, "367.5": 367_500_000_000, "1.000000001": 1_000_000_001} {
		got, err := parseSecNsec(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"1.0000000001", "x", "-1", "1.x"} {
		_, err := parseSecNsec(in)
		assert.Error(t, err, in)
	}
	for in, want := range map[string][2]float64{"10%/2": {0.1, 0.2}, "0%-10%": {0, 0.1}, "25%/4": {0.75, 1}} {
		lo, hi, err := parsePercentRange(in)
		require.NoError(t, err, in)
		assert.InDelta(t, want[0], lo, 1e-12, in)
		assert.InDelta(t, want[1], hi, 1e-12, in)
	}
}

// A stream describes its events as it goes, after the filter is made: its
// event filter is made ready at the first sample, and a name none of its
// events has fails the check as it does for a file.
func TestFilterEventsOfStream(t *testing.T) {
	t.Parallel()
	opts := func(f Filter) Options {
		return Options{NoSymbols: true, Filter: f, Lookup: buildidcache.Options{BuildIDDir: t.TempDir(), DebugDirs: []string{}, DebuginfodURLs: []string{}}}
	}
	const rec = "../testdata/perf/pipe.data"
	res, err := Analyze(context.Background(), Stream(pipeOf(t, rec), "-"), opts(Filter{Events: []string{"cpu-clock"}}))
	require.NoError(t, err)
	assert.EqualValues(t, 202, res.Samples)
	_, err = Analyze(context.Background(), Stream(pipeOf(t, rec), "-"), opts(Filter{Events: []string{"nosuch"}}))
	require.ErrorContains(t, err, `no event "nosuch"; the recording's events are cpu-clock:ppp`)
}
