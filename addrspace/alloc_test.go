package addrspace

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/perfdata"
)

// Lookup allocates nothing: it runs for every address of every sample.
// The addresses are the samples' IPs and callchains, user and kernel,
// looked up in the address spaces as the recording leaves them. Not
// parallel: testing.AllocsPerRun refuses to run in a parallel test.
func TestLookupAllocs(t *testing.T) {
	f, err := perfdata.Open("../testdata/perf/forkexec.data")
	require.NoError(t, err)
	defer f.Close()
	tr := New()
	type query struct {
		pid  uint32
		mode perfdata.CPUMode
		ip   uint64
	}
	var qs []query
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	for rs.Next() {
		s, ok := rs.Record().(*perfdata.Sample)
		if !ok {
			tr.Update(rs.Record())
			continue
		}
		qs = append(qs, query{s.PID(), s.CPUMode(), s.IP})
		for mode, ip := range s.Frames() {
			qs = append(qs, query{s.PID(), mode, ip})
		}
	}
	require.NoError(t, rs.Err())
	require.True(t, slices.ContainsFunc(qs, func(q query) bool { return q.mode == perfdata.CPUModeKernel }), "kernel addresses too")
	found := 0
	allocs := testing.AllocsPerRun(5, func() {
		found = 0
		for _, q := range qs {
			if tr.Lookup(q.pid, q.mode, q.ip) != nil {
				found++
			}
		}
	})
	assert.Greater(t, found, len(qs)/2, "most addresses are in a mapping")
	assert.Zero(t, allocs)
}
