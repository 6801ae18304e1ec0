package check

import (
	"fmt"
	"sync"
	"testing"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/perfdata"
)

// Finish does not build the stacks' location pointers nor the aggregates;
// the first Stack.Locations call builds the pointers for every stack, and
// the first Aggregates call the aggregates, once, even when many goroutines
// ask at the same time (go test -race), and they are what the samples
// recorded, with the trust flags Finish counted without them.
func TestStackLocationsLazy(t *testing.T) {
	t.Parallel()
	s := newTestSession(t, Options{NoSymbols: true})
	s.update(mmapRec(5, 0x1000, 0x1000, 0, "/nonexistent/missing"))
	s.update(mmapRec(5, 0x8000, 0x1000, 0, "/memfd:jit"))
	s.update(mmapRec(-1, 0xffffffff81000000, 0x1000000, 0xffffffff81000000, "[kernel.kallsyms]_text"))
	// A build-id in the table for a file that is not there: missing, so
	// untrusted; the other is memory without a file (no-file), trusted,
	// where an offset is the address.
	s.addBuildIDs([]perfdata.BuildIDEntry{{PID: -1, CPUMode: perfdata.CPUModeUser, BuildID: buildid.ID{0xaa, 0xbb}, Filename: "/nonexistent/missing"}})
	type want struct {
		frames []string // "path+offset", leaf first
		n      uint64
	}
	var wants []want
	for i := range 40 {
		k := 0xffffffff81000100 + 0x10*uint64(i)
		var chain []uint64
		var frames []string
		switch i % 4 {
		case 0: // kernel leaf, trusted user callers
			chain = []uint64{contextKernel, k, 0xffffffff81000010, contextUser, 0x8010, 0x8020 + uint64(i)}
			frames = []string{fmt.Sprintf("[kernel.kallsyms]+%#x", k), "[kernel.kallsyms]+0xffffffff81000010",
				"/memfd:jit+0x8010", fmt.Sprintf("/memfd:jit+%#x", 0x8020+i)}
		case 1: // an untrusted caller
			chain = []uint64{contextKernel, k, contextUser, 0x1000 + uint64(i), 0x8010}
			frames = []string{fmt.Sprintf("[kernel.kallsyms]+%#x", k), fmt.Sprintf("/nonexistent/missing+%#x", i),
				"/memfd:jit+0x8010"}
		case 2: // an untrusted leaf
			s.sample(&sampleEvent{PID: 5, TID: 5, Mode: perfdata.CPUModeUser, IP: 0x1000 + uint64(i), Period: 1,
				Callchain: []uint64{contextUser, 0x1000 + uint64(i), 0x8010}})
			wants = append(wants, want{frames: []string{fmt.Sprintf("/nonexistent/missing+%#x", i), "/memfd:jit+0x8010"}, n: 1})
			continue
		case 3: // no callchain
			s.sample(&sampleEvent{PID: 5, TID: 5, Mode: perfdata.CPUModeUser, IP: 0x8000 + uint64(i), Period: 1})
			wants = append(wants, want{frames: []string{fmt.Sprintf("/memfd:jit+%#x", 0x8000+i)}, n: 1})
			continue
		}
		for range i + 1 {
			s.sample(&sampleEvent{PID: 5, TID: 5, Mode: perfdata.CPUModeKernel, IP: k, Period: 1, Callchain: chain})
		}
		wants = append(wants, want{frames: frames, n: uint64(i + 1)})
	}
	res := finish(t, s)
	if len(res.Stacks) != len(wants) {
		t.Fatalf("%d stacks, want %d", len(res.Stacks), len(wants))
	}
	for _, st := range res.Stacks {
		if st.set == nil || st.set.ptrs != nil {
			t.Fatalf("stack %d: Finish built its location pointers", st.ID)
		}
	}
	if res.aggs != nil {
		t.Fatal("Finish built the aggregates")
	}
	aggs := make([][]Aggregate, 8)
	got := make([][]*Location, len(res.Stacks))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			if g%2 == 1 {
				aggs[g] = res.Aggregates()
			}
			// Each goroutine walks the stacks from another start, so
			// that the first calls race on different stacks.
			for j := range res.Stacks {
				id := (j + g*5) % len(res.Stacks)
				l := res.Stacks[id].Locations()
				if g == 0 {
					got[id] = l
				}
			}
			if g%2 == 0 {
				aggs[g] = res.Aggregates()
			}
		})
	}
	wg.Wait()
	var trusted, leaf, any uint64
	for id, st := range res.Stacks {
		w := wants[id]
		if st.ID != id+1 || len(got[id]) != len(w.frames) {
			t.Fatalf("stack %d (ID %d): %d locations, want %v", id, st.ID, len(got[id]), w.frames)
		}
		allTrusted := true
		for i, l := range got[id] {
			if s := fmt.Sprintf("%s+%#x", l.DSO.Path, l.Offset); s != w.frames[i] {
				t.Errorf("stack %d frame %d: %s, want %s", id, i, s, w.frames[i])
			}
			if l.ID < 1 || l.ID > len(res.Locations) || res.Locations[l.ID-1] != l {
				t.Errorf("stack %d frame %d: not Result.Locations[%d]", id, i, l.ID-1)
			}
			allTrusted = allTrusted && l.Trusted()
		}
		if st.Trusted != allTrusted || st.LeafTrusted != got[id][0].Trusted() {
			t.Errorf("stack %d: Trusted %v LeafTrusted %v, its locations say %v %v", id, st.Trusted, st.LeafTrusted, allTrusted, got[id][0].Trusted())
		}
		if again := st.Locations(); &again[0] != &got[id][0] {
			t.Errorf("stack %d: a second call built its locations again", id)
		}
		switch {
		case st.Trusted:
			trusted += w.n
		case !st.LeafTrusted:
			leaf += w.n
			any += w.n
		default:
			any += w.n
		}
	}
	if res.TrustedSamples != trusted || res.UntrustedAnySamples != any || res.UntrustedLeafSamples != leaf || trusted == 0 || any == 0 || leaf == 0 {
		t.Errorf("counts %d/%d/%d, the stacks say %d/%d/%d", res.TrustedSamples, res.UntrustedAnySamples, res.UntrustedLeafSamples, trusted, any, leaf)
	}
	// One aggregate per stack here (one thread, one event), in stack order.
	for g := range aggs {
		if len(aggs[g]) != len(wants) || &aggs[g][0] != &aggs[0][0] {
			t.Fatalf("goroutine %d: %d aggregates, want the same %d as the others", g, len(aggs[g]), len(wants))
		}
	}
	for i, a := range aggs[0] {
		if a.Stack != res.Stacks[i] || a.Samples != wants[i].n || a.Period != wants[i].n || a.PID != 5 || a.TID != 5 || a.Event != 0 {
			t.Errorf("aggregate %d: %+v, want stack %d with %d samples", i, a, i+1, wants[i].n)
		}
	}
	if (&Stack{}).Locations() != nil || (&Result{}).Aggregates() != nil {
		t.Error("a zero Stack has locations, or a zero Result aggregates")
	}
}
