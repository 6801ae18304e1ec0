package perfdata

import (
	"math/rand"
	"slices"
	"testing"
)

// TestSortItemsStable checks the ordered queue's run-merging sort against
// the library's stable sort on queues shaped like real rounds (a few
// ascending runs, one per CPU buffer, with equal times across and within
// runs) and on random ones: same order, and equal times keep input order.
func TestSortItemsStable(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(1))
	for trial := range 500 {
		var items []queued
		switch trial % 3 {
		case 0: // ascending runs
			for range 1 + r.Intn(9) {
				ts := uint64(r.Intn(50))
				for range r.Intn(40) {
					ts += uint64(r.Intn(3)) // 0: equal times within a run
					items = append(items, queued{ts: ts})
				}
			}
		case 1: // random times from a small set
			for range r.Intn(200) {
				items = append(items, queued{ts: uint64(r.Intn(10))})
			}
		default: // one run, or descending
			n := r.Intn(60)
			for i := range n {
				ts := uint64(i)
				if trial%2 == 0 {
					ts = uint64(n - i)
				}
				items = append(items, queued{ts: ts})
			}
		}
		for i := range items {
			items[i].off = int64(i) // input order
		}
		want := slices.Clone(items)
		slices.SortStableFunc(want, cmpQueued)
		q := orderQueue{items: items}
		q.sortItems()
		if !slices.Equal(q.items, want) {
			t.Fatalf("trial %d: sorted\n%v\nwant\n%v", trial, q.items, want)
		}
	}
}

// TestSortItemsNoAllocs: once its buffers have grown, sorting a round
// allocates nothing (TestSteadyStateAllocs counts per record; this shows
// where).
func TestSortItemsNoAllocs(t *testing.T) {
	items := make([]queued, 0, 4096)
	fill := func() {
		items = items[:0]
		for cpu := range 4 {
			for i := range 1000 {
				items = append(items, queued{ts: uint64(i*4 + cpu)})
			}
		}
	}
	q := orderQueue{}
	fill()
	q.items = items
	q.sortItems()
	if n := testing.AllocsPerRun(20, func() {
		fill()
		q.items = items
		q.sortItems()
	}); n != 0 {
		t.Errorf("%v allocations per sort, want 0", n)
	}
}

// TestSortItemsLargeQueueInPlace: a queue past the merge's limits (a file
// without FINISHED_ROUND filling the queue, or hostile input of many short
// runs) is sorted in place, stably, without the merge array.
func TestSortItemsLargeQueueInPlace(t *testing.T) {
	t.Parallel()
	for _, n := range []int{maxMergeItems + 1, 2*maxMergeRuns + 2} {
		items := make([]queued, n)
		for i := range items {
			// Descending pairs: n/2 runs, equal times within a pair.
			items[i] = queued{ts: uint64((n - i) / 2), off: int64(i)}
		}
		want := slices.Clone(items)
		slices.SortStableFunc(want, cmpQueued)
		q := orderQueue{items: items}
		q.sortItems()
		if !slices.Equal(q.items, want) {
			t.Fatalf("%d records: not sorted stably", n)
		}
		if q.scratch != nil {
			t.Errorf("%d records in %d runs: a merge array of %d was made", n, n/2, cap(q.scratch))
		}
	}
}
