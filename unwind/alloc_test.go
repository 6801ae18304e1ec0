package unwind

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/perfdata"
)

// Walk allocates nothing: it runs once per --call-graph dwarf sample, so
// its scratch space (the rows remember_state saves) lives on its stack,
// and a failed frame's error is a value made once. Not parallel:
// testing.AllocsPerRun refuses to run in a parallel test.
func TestWalkAllocs(t *testing.T) {
	tables := map[string]*Table{"libhot.so": table(t, "libhot.so"), "cshared": table(t, "cshared")}
	f, err := perfdata.Open("../testdata/perf/cshared-dwarf.data")
	require.NoError(t, err)
	defer f.Close()
	tr := addrspace.New()
	var stacks []*UserStack
	var pids []uint32
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	for rs.Next() {
		s, ok := rs.Record().(*perfdata.Sample)
		if !ok {
			tr.Update(rs.Record())
			continue
		}
		stacks = append(stacks, &UserStack{Mask: f.Events()[s.EventIndex].Attr.SampleRegsUser,
			Regs:  append([]uint64(nil), s.RegsUser...),
			Stack: append([]byte(nil), s.StackUser[:min(s.StackUserDynSize, uint64(len(s.StackUser)))]...)})
		pids = append(pids, s.PID())
	}
	require.NoError(t, rs.Err())
	require.NotEmpty(t, stacks)
	var pid uint32
	lookup := func(pc uint64) (*Table, uint64) {
		m := tr.Lookup(pid, perfdata.CPUModeUser, pc)
		if m == nil || !strings.HasPrefix(m.Path, recordedIn) {
			return nil, 0
		}
		return tables[strings.TrimPrefix(m.Path, recordedIn)], m.Offset(pc)
	}
	out := make([]uint64, 0, MaxFrames)
	frames := 0
	allocs := testing.AllocsPerRun(5, func() {
		frames = 0
		for i, u := range stacks {
			pid = pids[i]
			frames += len(Walk(u, lookup, out[:0]))
		}
	})
	assert.Greater(t, frames, 5*len(stacks), "the walks go past the leaf")
	assert.Zero(t, allocs)

	// A frame whose rules use remember_state, and one whose rules this
	// unwinder does not follow (an empty CFA expression): the walk ends there.
	c := cieSpec{ra: dwRA, init: entryRules(dwRA)}
	tb := parsed(t, ehFrame(c,
		fdeSpec{start: 0x1000, size: 0x100, insns: []byte{0x0a, 0x0e, 16, 0x0b}},
		fdeSpec{start: 0x2000, size: 0x100, insns: []byte{0x0f, 0}}))
	const ip, sp = 1 << 8, 1 << 7
	u := &UserStack{Mask: ip | sp, Regs: []uint64{0x7000, 0x1010}, Stack: binary.LittleEndian.AppendUint64(nil, 0x2011)}
	in := func(pc uint64) (*Table, uint64) { return tb, pc }
	var got []uint64
	allocs = testing.AllocsPerRun(5, func() { got = Walk(u, in, out[:0]) })
	assert.Equal(t, []uint64{0x1010, 0x2010}, got)
	assert.Zero(t, allocs)
}
