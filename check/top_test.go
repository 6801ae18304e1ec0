package check

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/perfdata"
)

// Top on the cshared-fp fixture (301 cpu-clock samples of 1001001 ns,
// recorded with -g): self periods add up to the event's period, the table
// is ordered, -n keeps the first entries and counts the rest, and the
// hottest function is libhot.so's lib_mix with 155 samples, as perf report
// --no-children says (docs/commands-check.md).
func TestTop(t *testing.T) {
	t.Parallel()
	res, err := Analyze(context.Background(), Path("../testdata/perf/cshared-fp.data"), withSystemSymbols(Options{Lookup: buildidcache.Options{BuildIDDir: fixtureCache(t)}}))
	if err != nil {
		t.Fatal(err)
	}
	all := Top(res, TopOptions{})
	if len(all) != 1 {
		t.Fatalf("%d tables, want 1", len(all))
	}
	tb := all[0]
	assert.Equal(t, "cpu-clock", tb.Event)
	if assert.NotNil(t, tb.Attr) {
		assert.Equal(t, &res.EventInfo[0].Attr, tb.Attr)
	}
	if tb.Samples != 301 || tb.Period != 301*1001001 || tb.Omitted != 0 {
		t.Errorf("table: %d samples, period %d, omitted %d", tb.Samples, tb.Period, tb.Omitted)
	}
	var self, selfN uint64
	for i, e := range tb.Entries {
		self += e.Self
		selfN += e.SelfSamples
		if e.Self == 0 {
			t.Errorf("entry %s has no self time in a self-ordered table", e.Label())
		}
		if e.Total < e.Self {
			t.Errorf("entry %s: total %d < self %d", e.Label(), e.Total, e.Self)
		}
		if i > 0 && tb.Entries[i-1].Self < e.Self {
			t.Errorf("not ordered by self at %d", i)
		}
	}
	if self != tb.Period || selfN != tb.Samples {
		t.Errorf("self adds up to %d (%d samples), want %d (%d)", self, selfN, tb.Period, tb.Samples)
	}
	if e := tb.Entries[0]; e.Name != "lib_mix" || e.DSO.Path != "/work/main/testdata/perf/bin/libhot.so" || e.SelfSamples != 155 {
		t.Errorf("hottest: %s with %d samples; want lib_mix (libhot.so) with 155", e.Label(), e.SelfSamples)
	}

	two := Top(res, TopOptions{N: 2})[0]
	if len(two.Entries) != 2 || two.Omitted != len(tb.Entries)-2 || !reflect.DeepEqual(two.Entries[1], tb.Entries[1]) {
		t.Errorf("n=2: %d entries, omitted %d (of %d)", len(two.Entries), two.Omitted, len(tb.Entries))
	}

	byTotal := Top(res, TopOptions{By: ByTotal})[0]
	for i := 1; i < len(byTotal.Entries); i++ {
		if byTotal.Entries[i-1].Total < byTotal.Entries[i].Total {
			t.Fatalf("not ordered by total at %d", i)
		}
	}
	// main is on (nearly) every stack: total ordering puts it first, at
	// the number of samples whose stack reaches it, with no self time.
	if len(byTotal.Entries) < len(tb.Entries) {
		t.Errorf("by total: %d entries, fewer than by self (%d)", len(byTotal.Entries), len(tb.Entries))
	}
	if e := byTotal.Entries[0]; e.TotalSamples < 290 || e.TotalSamples > 301 {
		t.Errorf("by total, first: %s with %d samples", e.Label(), e.TotalSamples)
	}
}

// TopOptions.TrustedOnly drops the entries of untrusted DSOs and keeps the
// others as they were; the table's totals still count every sample.
func TestTopTrustedOnly(t *testing.T) {
	t.Parallel()
	res, err := Analyze(context.Background(), Path("../testdata/perf/cshared-fp.data"), withSystemSymbols(Options{Lookup: isolated(fixtureCache(t))}))
	require.NoError(t, err)
	lib := dsoNamed(t, res, "libhot.so")
	require.Equal(t, Verified, lib.Verdict)
	// As if the binary found had been another build: its frames are
	// untrusted (the names it was given stay, as with --trust-paths).
	lib.Verdict = Mismatch

	all := Top(res, TopOptions{})[0]
	trusted := Top(res, TopOptions{TrustedOnly: true})[0]
	var want []TopEntry
	for _, e := range all.Entries {
		if e.DSO.Trusted() {
			want = append(want, e)
		}
	}
	require.Less(t, len(want), len(all.Entries), "no untrusted entry: nothing tested")
	assert.Equal(t, want, trusted.Entries)
	for _, e := range trusted.Entries {
		assert.NotSame(t, lib, e.DSO, e.Label())
	}
	assert.Equal(t, all.Samples, trusted.Samples)
	assert.Equal(t, all.Period, trusted.Period)

	two := Top(res, TopOptions{TrustedOnly: true, N: 2})[0]
	assert.Equal(t, want[:2], two.Entries)
	assert.Equal(t, len(want)-2, two.Omitted)
}

// TestEventName checks that events are named from EventInfo, the one list
// of the recording's events, and numbered where it names none.
func TestEventName(t *testing.T) {
	t.Parallel()
	r := &Result{EventInfo: []perfdata.Event{{Name: "cycles"}, {}}}
	assert.Equal(t, "cycles", r.EventName(0))
	assert.Equal(t, "event1", r.EventName(1))
	assert.Equal(t, "event2", r.EventName(2), "a sample may name an event past the attrs")
	assert.Equal(t, []string{"cycles", ""}, r.Report().Events)
}

// keptFrames keeps what perf report --max-stack keeps of a chain of n
// frames, leaf first: the first N in the graph's order, from the
// outermost caller but with Callees; all of a chain no longer than N, or
// with N 0.
func TestKeptFrames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n      int
		opts   TopOptions
		lo, hi int
	}{
		{5, TopOptions{}, 0, 5},
		{5, TopOptions{MaxStack: 5, Graph: Callers}, 0, 5},
		{5, TopOptions{MaxStack: 8, Graph: Callees}, 0, 5},
		{5, TopOptions{MaxStack: 2, Graph: Callers}, 3, 5},
		{5, TopOptions{MaxStack: 2, By: ByTotal}, 3, 5},
		{5, TopOptions{MaxStack: 2, Graph: Callees}, 0, 2},
		{5, TopOptions{MaxStack: 1, Graph: Callees}, 0, 1},
		{0, TopOptions{MaxStack: 1}, 0, 0},
	} {
		lo, hi := keptFrames(c.n, c.opts)
		assert.Equal(t, [2]int{c.lo, c.hi}, [2]int{lo, hi}, "%d frames, %+v", c.n, c.opts)
	}
}
