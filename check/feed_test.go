package check

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/unwind"
)

// fingerprint renders everything a Result says that reading order could
// change: each DSO's identity, verdict and hits; every stack's locations;
// every aggregate; every sample EachSample reads again with its addresses
// (when the result can); the totals.
func fingerprint(t *testing.T, res *Result) string {
	t.Helper()
	var b strings.Builder
	rep, err := json.Marshal(res.Report())
	if err != nil {
		t.Fatal(err)
	}
	b.Write(rep)
	b.WriteByte('\n')
	for _, st := range res.Stacks {
		fmt.Fprintf(&b, "stack %d:", st.ID)
		for _, l := range st.Locations() {
			fmt.Fprintf(&b, " %s", l.raw())
		}
		b.WriteByte('\n')
	}
	for _, ag := range res.Aggregates() {
		fmt.Fprintf(&b, "agg %d %d %d %d %q %d %d\n", ag.Stack.ID, ag.Event, ag.PID, ag.TID, ag.Comm, ag.Samples, ag.Period)
	}
	if res.replay != nil {
		require.NoError(t, res.EachSample(context.Background(), func(s *Sample) error {
			fmt.Fprintf(&b, "sample %d %d %d %d %d %d %q %v %v %x", s.Event, s.PID, s.TID, s.CPU, s.Time, s.Period, s.Comm,
				s.Stack.Trusted, s.Stack.LeafTrusted, s.IPs)
			for _, l := range s.Stack.Locations() {
				fmt.Fprintf(&b, " %s", l.raw())
			}
			b.WriteByte('\n')
			return nil
		}))
	}
	fmt.Fprintf(&b, "samples %d trusted %d leaf %d any %d stackuser %d unproven %d\n", res.Samples, res.TrustedSamples,
		res.UntrustedLeafSamples, res.UntrustedAnySamples, res.StackUserSamples, res.UnprovenUnwinds)
	return b.String()
}

// Reading on one goroutine and checking on another (session.feed) gives
// exactly the result of doing both on one, on every fixture: with batches
// of a few records (smallBatch), so that each recording crosses between
// the goroutines hundreds of times, user stack copies (cshared-dwarf) and
// process events (forkexec) included. The serial path is the one
// GOMAXPROCS 1 and Options.Workers 1 take.
func TestFeedPipelineSameAsSerial(t *testing.T) {
	t.Parallel()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one CPU: feed never pipelines")
	}
	cache := fixtureCache(t)
	for _, name := range feedFixtures(t) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			t.Parallel()
			run := func(workers int, replay bool) string {
				res, err := Analyze(context.Background(), Path(name), Options{Lookup: buildidcache.Options{BuildIDDir: cache},
					Replay: replay, NoSymbols: true, Workers: workers, batchOps: smallBatch, rawProbe: 1})
				require.NoError(t, err)
				require.NotZero(t, res.Samples, "no samples")
				return fingerprint(t, res)
			}
			for _, replay := range []bool{true, false} {
				serial, piped := run(1, replay), run(0, replay)
				assert.True(t, serial == piped, "pipelined reading (replay %v) differs from serial:\n%s", replay, firstDiff(serial, piped))
			}
		})
	}
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  serial:    %s\n  pipelined: %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines against %d", len(al), len(bl))
}

// feedDirect is the session's feeding written plainly, record by record
// with no batches: the reference the batched reading is held to.
func feedDirect(t *testing.T, s *session, f recording) {
	t.Helper()
	events := f.Events()
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	for rs.Next() {
		switch r := rs.Record().(type) {
		case *perfdata.Sample:
			e := sampleEvent{Event: max(r.EventIndex, 0), PID: r.PID(), TID: r.TID(), CPU: r.CPU(),
				Time: r.Time(), Period: r.Period, Mode: r.CPUMode(), IP: r.IP, Callchain: r.Callchain,
				StackUser: len(r.StackUser) > 0}
			if r.Fields&perfdata.SamplePeriod == 0 && r.EventIndex >= 0 && r.EventIndex < len(events) {
				e.Period = events[r.EventIndex].Attr.SamplePeriod
			}
			if r.RegsUserABI == 2 && len(r.StackUser) > 0 && r.EventIndex >= 0 && r.EventIndex < len(events) {
				n := min(r.StackUserDynSize, uint64(len(r.StackUser)))
				e.User = &unwind.UserStack{Mask: events[r.EventIndex].Attr.SampleRegsUser, Regs: r.RegsUser, Stack: r.StackUser[:n]}
			}
			s.sample(&e)
		default:
			s.update(r)
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
}

// Session.Feed's batches, pipelined or not, deliver exactly what feeding
// the records one by one does: the same stacks, aggregates and kept
// samples, on every fixture (each spanning many batches).
func TestFeedSameAsDirect(t *testing.T) {
	t.Parallel()
	cache := fixtureCache(t)
	for _, name := range feedFixtures(t) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			t.Parallel()
			f, err := perfdata.Open(name)
			require.NoError(t, err)
			defer f.Close()
			for _, o := range []Options{{Replay: true}, {}, {rawProbe: 7}, {rawProbe: 1, rawEntries: 5}} {
				feedSameAsDirect(t, f, cache, o)
			}
		})
	}
}

// feedSameAsDirect is TestFeedSameAsDirect on f with o: with
// Options.Replay samples are counted by DSO signature, without by stack;
// a small o.rawProbe has the stacker take over (stackerDue) when
// pipelined, after the first sample or in the middle of the reading, and
// a small o.rawEntries has the raw-stack cache start over many times, and
// the stacker's raw-stack numbers with it.
func feedSameAsDirect(t *testing.T, f *perfdata.File, cache string, o Options) {
	t.Helper()
	var prints []string
	for _, workers := range []int{-1, 1, 0} { // direct, batched serially, pipelined
		opts := o
		opts.Lookup, opts.NoSymbols = buildidcache.Options{BuildIDDir: cache}, true
		opts.Workers, opts.batchOps = workers, smallBatch
		s := newTestSession(t, opts)
		if workers < 0 {
			s.opts.Workers = 0
			feedDirect(t, s, f)
		} else {
			require.NoError(t, s.feed(context.Background(), f))
		}
		res, err := s.finish(context.Background())
		require.NoError(t, err)
		require.NotZero(t, res.Samples, "no samples")
		prints = append(prints, fingerprint(t, res))
	}
	assert.True(t, prints[1] == prints[0], "batched reading (%+v) differs from record-by-record feeding:\n%s", o, firstDiff(prints[0], prints[1]))
	assert.True(t, prints[2] == prints[0], "pipelined reading (%+v) differs from record-by-record feeding:\n%s", o, firstDiff(prints[0], prints[2]))
}

// smallBatch is Options.batchOps for the feed tests: batches of three
// records, so that each fixture spans many batches.
const smallBatch = 3

// feedFixtures lists the committed recordings.
func feedFixtures(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../testdata/perf/*.data")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no fixture matches ../testdata/perf/*.data")
	return files
}
