package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// foreignFile returns the path of a recording of the shared corpus's
// foreign/ directory (recordings by other tools and machines; its
// SOURCES.md says where each came from), skipping when it is absent.
func foreignFile(t *testing.T, name string) string {
	t.Helper()
	return fixtures.Corpus(t, "foreign/"+name)
}

// TestStatsUncountedSimpleperf: simpleperf's own CALLCHAIN records, at
// which perf report stops, are read past and counted apart from perf's
// figures, in stats (text and JSON) and info.
func TestStatsUncountedSimpleperf(t *testing.T) {
	t.Parallel()
	data := foreignFile(t, "simpleperf--perf_with_callchain_record.data")
	out, errs, code := runCmd(t, "stats", data)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "           TOTAL events:         70\n")
	assert.Contains(t, out, "\nNot counted (types perf does not read):\nsimpleperf:CALLCHAIN events:         40\n")

	out, errs, code = runCmd(t, "stats", "--json", data)
	require.Equal(t, exitOK, code, errs)
	var s statsJSON
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.Equal(t, uint64(70), s.Total)
	assert.Equal(t, []statsTypeJSON{{Type: "simpleperf:CALLCHAIN", ID: 32775, Count: 40}}, s.Uncounted)

	out, errs, code = runCmd(t, "info", data)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "records:     70, and 40 that perf does not read (simpleperf:CALLCHAIN 40)\n")
}

// TestStatsSimpleperfTracingData: the two simpleperf files whose
// TRACING_DATA holds its payload inside header.size read to their end.
func TestStatsSimpleperfTracingData(t *testing.T) {
	t.Parallel()
	for name, total := range map[string]string{
		"simpleperf--perf_sched_stat_runtime.data":    "           TOTAL events:      17438\n",
		"simpleperf--perf_with_tracepoint_event.data": "           TOTAL events:        107\n",
	} {
		out, errs, code := runCmd(t, "stats", foreignFile(t, name))
		require.Equal(t, exitOK, code, "%s: %s", name, errs)
		assert.Contains(t, out, total, name)
		assert.Contains(t, out, "    TRACING_DATA events:          1", name)
	}
}
