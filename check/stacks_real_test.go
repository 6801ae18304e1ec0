package check

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/dso"
)

// twoCallers spins in one leaf reached from two call sites at the same depth:
// its samples have callchains of one length that agree in their first
// entries (marker, leaf address) and differ deeper, which a raw-stack
// cache keyed on less than the whole callchain would merge.
const twoCallers = `
volatile unsigned long sink;
__attribute__((noinline)) void leaf(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) void via_a(unsigned long n) { leaf(n); sink++; }
__attribute__((noinline)) void via_b(unsigned long n) { leaf(n); sink--; }
int main(void) {
	for (int r = 0; r < 300; r++) {
		via_a(300000);
		via_b(300000);
	}
	return 0;
}
`

// TestRealStacksMatchPerfScript: every sample of a frame-pointer recording
// has the user frames perf script gives it, frame for frame (matched by
// thread and time), and both callers of the hot leaf are seen under it.
func TestRealStacksMatchPerfScript(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("twocallers")
	w.gcc(bin, twoCallers, "-fno-optimize-sibling-calls", "-fno-inline")
	data := w.record("twocallers.data", nil, bin)
	want := map[sampleKey][]string{}
	for _, s := range perfScriptStacks(t, w, data) {
		want[sampleKey{s.tid, s.time}] = s.frames
	}
	res := w.analyze(data, Options{Replay: true})
	mustDSO(t, res, bin, Verified)
	// The frames under leaf's, by address: leaf keeps no frame of its
	// own (a leaf function), so the frame-pointer walk goes from leaf to
	// via_a's or via_b's call site in main, two different addresses.
	callers := map[string]int{}
	var compared, differ int
	// outer is a location's function (its outermost frame).
	outer := func(l *Location) string {
		if len(l.Frames) == 0 {
			return ""
		}
		return l.Frames[len(l.Frames)-1].Function
	}
	res.EachSample(context.Background(), func(s *Sample) error {
		var got []string
		var user []*Location
		for _, l := range s.Stack.Locations() {
			if l.DSO.Kind == dso.Kernel || l.DSO.Kind == dso.Unknown {
				continue
			}
			user = append(user, l)
			got = append(got, dso.BaseName(l.DSO.Path)+"+0x"+strconv.FormatUint(l.Offset, 16))
		}
		wnt, ok := want[sampleKey{int32(s.TID), s.Time}]
		if !ok {
			t.Errorf("perfcheck has a sample perf script lacks: tid %d time %d", s.TID, s.Time)
			return nil
		}
		compared++
		if strings.Join(got, " ") != strings.Join(wnt, " ") {
			if differ++; differ <= 3 {
				t.Errorf("tid %d time %d:\n\tperfcheck  %v\n\tperf script %v", s.TID, s.Time, got, wnt)
			}
			return nil
		}
		if len(user) >= 2 && outer(user[0]) == "leaf" {
			callers[got[1]]++
		}
		return nil
	})
	if compared != len(want) || uint64(compared) != res.Samples {
		t.Errorf("compared %d samples; perf script shows %d, perfcheck counts %d", compared, len(want), res.Samples)
	}
	if differ > 0 {
		t.Errorf("%d of %d samples have other user frames than perf script's", differ, compared)
	}
	// The recording must hold what the test is about.
	busy := 0
	for _, n := range callers {
		if n >= 10 {
			busy++
		}
	}
	if busy < 2 {
		t.Errorf("frames under leaf %v: want two, each under at least 10 samples", callers)
	}
}
