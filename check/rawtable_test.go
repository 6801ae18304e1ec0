package check

import (
	"context"
	"math/rand"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/perfdata"
)

// TestRawTableCounts feeds a raw-stack table the way session.sample does,
// with a small bound so it starts over many times and grows on the way,
// and checks that every sample's counts reach its aggregate exactly once:
// through a change of aggregate, a restart, or the final flush.
func TestRawTableCounts(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(1))
	at := newAggTable()
	for i := range 8 {
		at.find(aggKey{stack: int32(i)})
	}
	tab := rawTable{aggs: &at}
	type counts struct{ samples, period uint64 }
	var want [8]counts
	const limit = 700 // raw stacks before the table starts over
	for range 200000 {
		key := rawKey{uint64(r.Intn(3000)) * 0x9e3779b97f4a7c15, uint64(r.Intn(2))}
		if r.Intn(5000) == 0 {
			key = rawKey{} // the digest that would read as an empty slot
		}
		sl := tab.find(key)
		if sl == nil {
			sl = tab.insert(key, int32(nonZero(key)[0]%97), limit)
			if got := tab.find(key); got != sl {
				t.Fatalf("find after insert: %p, want %p", got, sl)
			}
		}
		if sl.stack != int32(nonZero(key)[0]%97) {
			t.Fatalf("key %x: stack %d, want %d", key, sl.stack, nonZero(key)[0]%97)
		}
		ai := int(key[1]*4) + r.Intn(4) // a raw stack feeds one of 4 aggregates
		if sl.agg != int32(ai+1) {
			tab.flushCounts(sl)
			sl.agg = int32(ai + 1)
		}
		period := uint64(r.Intn(1000))
		sl.samples++
		sl.period += period
		want[ai].samples++
		want[ai].period += period
		if tab.n > limit {
			t.Fatalf("%d raw stacks held, bound %d", tab.n, limit)
		}
	}
	tab.flush()
	for i := range int32(8) {
		if a := at.at(i); (counts{a.samples, a.period}) != want[i] {
			t.Errorf("aggregate %d: %+v, want %+v", i, counts{a.samples, a.period}, want[i])
		}
	}
	tab.flush() // a second flush adds nothing
	for i := range int32(8) {
		if a := at.at(i); (counts{a.samples, a.period}) != want[i] {
			t.Errorf("after a second flush, aggregate %d: %+v, want %+v", i, counts{a.samples, a.period}, want[i])
		}
	}
}

// TestRawSlotSize: a slot is one cache line.
func TestRawSlotSize(t *testing.T) {
	t.Parallel()
	if n := unsafeSizeof(rawSlot{}); n != 64 {
		t.Errorf("rawSlot is %d bytes, want 64", n)
	}
}

func unsafeSizeof(s rawSlot) uintptr { return unsafe.Sizeof(s) }

// TestFeedOpSize: a batch's op is one cache line, so that ops never share
// a line the other goroutine is reading.
func TestFeedOpSize(t *testing.T) {
	t.Parallel()
	if n := unsafe.Sizeof(feedOp{}); n != 64 {
		t.Errorf("feedOp is %d bytes, want 64", n)
	}
}

// TestSessionAggregatesThreadsSharingStacks: two threads of one process
// take turns on the same raw stacks, so each raw-stack slot keeps changing
// the aggregate its counts go to; every sample's count and period must end
// in its own thread's aggregate, through session.sample and Finish.
func TestSessionAggregatesThreadsSharingStacks(t *testing.T) {
	t.Parallel()
	s := newTestSession(t, Options{NoSymbols: true})
	s.update(commRec(7, 7, "prog", true))
	s.update(mmapRec(7, 0x10000, 0x1000, 0, "/nonexistent/prog"))
	type want struct{ samples, period uint64 }
	wants := map[uint32]*want{7: {}, 8: {}}
	r := rand.New(rand.NewSource(2))
	for i := range 5000 {
		tid := uint32(7 + r.Intn(2))
		ip := uint64(0x10100 + 8*r.Intn(3))
		period := uint64(1 + i%13)
		s.sample(&sampleEvent{PID: 7, TID: tid, Mode: perfdata.CPUModeUser, IP: ip, Period: period,
			Callchain: []uint64{contextUser, ip, 0x10800}})
		wants[tid].samples++
		wants[tid].period += period
	}
	res, err := s.finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint32]*want{7: {}, 8: {}}
	for _, a := range res.Aggregates() {
		got[a.TID].samples += a.Samples
		got[a.TID].period += a.Period
	}
	for tid, w := range wants {
		if *got[tid] != *w {
			t.Errorf("thread %d: %d samples, period %d; want %d, %d", tid, got[tid].samples, got[tid].period, w.samples, w.period)
		}
	}
}

// TestAggregatesOrderSignedPIDs checks that aggregates keep perf's order
// of pids, the signed pid_t's: the kernel's pid -1 (0xffffffff as
// perfdata reads it) comes before a process's.
func TestAggregatesOrderSignedPIDs(t *testing.T) {
	t.Parallel()
	s := newTestSession(t, Options{NoSymbols: true})
	// An address neither maps: one stack, [unknown], for both.
	for _, pid := range []uint32{7, ^uint32(0)} {
		s.sample(&sampleEvent{PID: pid, TID: pid, Mode: perfdata.CPUModeUser, IP: 0x10100, Period: 1})
	}
	res, err := s.finish(context.Background())
	require.NoError(t, err)
	var pids []int32
	for _, a := range res.Aggregates() {
		pids = append(pids, int32(a.PID))
	}
	assert.Equal(t, []int32{-1, 7}, pids)
}
