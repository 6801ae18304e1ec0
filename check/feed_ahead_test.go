package check

import (
	"context"
	"hash/maphash"
	"testing"

	"github.com/perfcheck/perfcheck/perfdata"
)

// TestApplyKeysAheadSeeMapChanges: apply takes every sample's raw-stack key
// before it applies the batch; a sample after a map record in the same
// batch must not be looked up under the maps before it. Here one process
// maps libA, takes a sample, maps libB over it, and takes a sample with the
// same address and callchain: the second belongs to libB.
func TestApplyKeysAheadSeeMapChanges(t *testing.T) {
	t.Parallel()
	s := newTestSession(t, Options{NoSymbols: true})
	b := newFeedBatch(feedBatchOps)
	b.other(commRec(7, 7, "prog", true))
	const ip = 0x10100
	sample := func() {
		op := feedOp{sample: true, pid: 7, tid: 7, mode: perfdata.CPUModeUser, ip: ip, period: 1,
			chainLo: int32(len(b.words)), aux: -1}
		b.words = append(b.words, contextUser, ip)
		op.chainHi = int32(len(b.words))
		op.chainHash = maphash.Bytes(s.rawSeeds[0], u64Bytes(b.words[op.chainLo:op.chainHi]))
		b.ops = append(b.ops, op)
	}
	for _, lib := range []string{"/nonexistent/libA.so", "/nonexistent/libB.so"} {
		b.other(mmapRec(7, 0x10000, 0x1000, 0, lib))
		sample()
	}
	s.apply(b)
	oneLeafInEachLib(t, s)
}

// TestLocMemoSeesMapChanges: a frame address resolved before a map change
// is resolved again after it, even inside a raw stack never seen before
// (the frame memo is keyed by the maps' generations, as the raw-stack cache
// is): libB's sample must not take libA's location from the memo.
func TestLocMemoSeesMapChanges(t *testing.T) {
	t.Parallel()
	s := newTestSession(t, Options{NoSymbols: true})
	s.update(commRec(7, 7, "prog", true))
	const ip = 0x10100
	for i, lib := range []string{"/nonexistent/libA.so", "/nonexistent/libB.so"} {
		s.update(mmapRec(7, 0x10000, 0x1000, 0, lib))
		// A callchain of another length each time: a new raw stack.
		chain := []uint64{contextUser, ip}
		for range i {
			chain = append(chain, 0x10200)
		}
		s.sample(&sampleEvent{PID: 7, TID: 7, Mode: perfdata.CPUModeUser, IP: ip, Period: 1, Callchain: chain})
	}
	oneLeafInEachLib(t, s)
}

// oneLeafInEachLib finishes s and checks that libA and libB each have one
// sample's leaf.
func oneLeafInEachLib(t *testing.T, s *session) {
	t.Helper()
	res, err := s.finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hits := map[string]uint64{}
	for _, d := range res.DSOs {
		hits[d.Path] = d.HitsLeaf
	}
	if hits["/nonexistent/libA.so"] != 1 || hits["/nonexistent/libB.so"] != 1 {
		t.Errorf("leaf hits %v, want one sample in each library", hits)
	}
}
