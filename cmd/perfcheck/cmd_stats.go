package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/perfcheck/perfcheck/perfdata"
)

func init() {
	register(&command{
		name:    "stats",
		usage:   "perfcheck stats [--json] FILE",
		summary: "record counts per type and samples per event, as perf report --stats",
		run:     runStats,
	})
}

// statsJSON is the --json output of perfcheck stats (docs/commands.md).
type statsJSON struct {
	File string `json:"file"`
	// Total counts every record, as perf's "TOTAL events" line.
	Total uint64 `json:"total"`
	// ExcludesAux is true when the recording has AUX area data (the
	// AUXTRACE feature): its decoded events are not counted.
	ExcludesAux bool             `json:"excludes_aux"`
	Types       []statsTypeJSON  `json:"types"`
	Events      []statsEventJSON `json:"events"`
	// Uncounted are the records of types perf does not count (not in
	// Total): simpleperf's own records, types newer than perfcheck.
	Uncounted []statsTypeJSON `json:"uncounted,omitempty"`
	// Callchains says what simpleperf's CALLCHAIN records were used for.
	Callchains *callchainsJSON `json:"simpleperf_callchains,omitempty"`
	// Warnings are what the reader tolerated (an unfinished file, a
	// clipped last compressed record, trailing bytes after a pipe stream).
	Warnings []string `json:"warnings,omitempty"`
	Error    string   `json:"error,omitempty"`
}

type statsTypeJSON struct {
	Type    string  `json:"type"`
	ID      uint32  `json:"id"`
	Count   uint64  `json:"count"`
	Percent float64 `json:"percent"`
}

type statsEventJSON struct {
	Name        string `json:"name"`
	Samples     uint64 `json:"samples"`
	LostSamples uint64 `json:"lost_samples"`
}

// recordStats holds what perf report --stats counts.
type recordStats struct {
	total      uint64
	byType     [perfMaxRecordType]uint64 // only types below it are counted, as perf does
	samples    []uint64                  // per event index
	lostPerEvt []uint64                  // LOST_SAMPLES per event index

	// For perfcheck info: every SAMPLE record, the times of the first
	// and last sample that has a time, and whether compressed records
	// were met.
	allSamples          uint64
	firstTime, lastTime uint64
	timed               bool
	compressed          bool
	// lostEvents sums LOST records (ring buffer overruns), lostSamples
	// all LOST_SAMPLES records.
	lostEvents, lostSamples uint64
	// uncounted counts the records of types perf does not count (those
	// from perfMaxRecordType on: simpleperf's own records, newer types),
	// which perf report stops at; perfcheck reads past them and says how
	// many there were.
	uncounted map[perfdata.RecordType]uint64
	// chains is what the reader did with simpleperf's CALLCHAIN records.
	chains perfdata.Callchains
}

// perfMaxRecordType is PERF_RECORD_HEADER_MAX of the newest perf this
// package knows types up to; perf counts every record below it.
const perfMaxRecordType = perfdata.RecordSchedstatDomain + 1

// countRecords reads every record of f the way perf report --stats counts
// them (perf_session__process_event in tools/perf/util/session.c and
// count_sample_event / count_lost_samples_event in builtin-report.c):
//   - every record is counted in TOTAL and under its type, perf's own
//     records (type >= 64) included, and a COMPRESSED record is counted
//     as well as each record it holds;
//   - an event's SAMPLE count is the samples perf delivers to it: those
//     whose id maps to the event (a sample with an id that no event
//     owns is dropped as perf's nr_unknown_id);
//   - an event's LOST_SAMPLES count is the sum of the lost fields of the
//     LOST_SAMPLES records whose sample_id names it.
//
// It returns what was counted before an error together with the error.
func countRecords(f *recording) (*recordStats, error) {
	st := &recordStats{}
	st.grow(len(f.Events()))
	ef := newEventFinder(f)
	rs := f.Records(perfdata.RecordsOptions{SampleHeadersOnly: true})
	for rs.Next() {
		r := rs.Record()
		// Samples are most records: counted without the calls through
		// the Record interface that the other types take.
		if x, ok := r.(*perfdata.Sample); ok {
			st.countSample(&x.RecordHeader, ef)
			continue
		}
		h := r.Header()
		t := r.Type()
		if t < perfMaxRecordType {
			st.total++
			st.byType[t]++
		} else {
			if st.uncounted == nil {
				st.uncounted = map[perfdata.RecordType]uint64{}
			}
			st.uncounted[t]++
		}
		switch x := r.(type) {
		case *perfdata.Compressed:
			st.compressed = true
		case *perfdata.Lost:
			st.lostEvents += x.Lost
		case *perfdata.LostSamples:
			st.lostSamples += x.Lost
			if i := ef.find(h); i >= 0 {
				st.grow(i + 1)
				st.lostPerEvt[i] += x.Lost
			}
		}
	}
	st.chains = rs.Callchains()
	return st, rs.Err()
}

// grow makes room for the counts of n events.
func (st *recordStats) grow(n int) {
	for len(st.samples) < n {
		st.samples = append(st.samples, 0)
		st.lostPerEvt = append(st.lostPerEvt, 0)
	}
}

// countSample counts the SAMPLE record of header h.
func (st *recordStats) countSample(h *perfdata.RecordHeader, ef *eventFinder) {
	st.total++
	st.byType[perfdata.RecordSample]++
	st.allSamples++
	if h.SampleID.Fields&perfdata.SampleTime != 0 {
		t := h.SampleID.Time
		if !st.timed || t < st.firstTime {
			st.firstTime = t
		}
		if !st.timed || t > st.lastTime {
			st.lastTime = t
		}
		st.timed = true
	}
	if len(ef.fixed) == 1 && len(st.samples) > 0 {
		st.samples[0]++ // what find says of a recording of one event
	} else if i := ef.find(h); i >= 0 {
		st.grow(i + 1)
		st.samples[i]++
	}
}

// eventFinder finds the event a record is delivered to, as perf's
// evlist__id2evsel (tools/perf/util/evlist.c) does with the id
// evsel__parse_sample read: the first event when there is only one or the
// id is 0; else the event that owns the id; else none when the events
// have sample_id_all (perf counts the record as nr_unknown_id), the first
// one otherwise. A record without an id field has perf's id -1.
type eventFinder struct {
	f    *recording
	n    int
	byID map[uint64]int
	// fixed holds the events of a file-format perf.data opened by name,
	// which its header lists once and for all: read once, not per
	// record.
	fixed []perfdata.Event
}

func newEventFinder(f *recording) *eventFinder {
	ef := &eventFinder{f: f}
	if f.file != nil && !f.file.IsPipe() {
		ef.fixed = f.Events()
	}
	return ef
}

func (ef *eventFinder) find(h *perfdata.RecordHeader) int {
	evs := ef.fixed
	if evs == nil {
		evs = ef.f.Events()
	}
	if len(evs) == 0 {
		return -1
	}
	id := ^uint64(0)
	if h.SampleID.Fields&(perfdata.SampleID|perfdata.SampleIdentifier) != 0 {
		id = h.SampleID.ID
	}
	if len(evs) == 1 || id == 0 {
		return 0
	}
	if ef.byID == nil || ef.n != len(evs) {
		// Pipe streams add events as they go: index them again.
		ef.byID, ef.n = map[uint64]int{}, len(evs)
		for i, e := range evs {
			for _, x := range e.IDs {
				if _, dup := ef.byID[x]; !dup {
					ef.byID[x] = i
				}
			}
		}
	}
	if i, ok := ef.byID[id]; ok {
		return i
	}
	if evs[0].Attr.SampleIDAll() {
		return -1
	}
	return 0
}

func runStats(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const name = "stats"
	file, jsonOut, code := parseFileArgs(name, "perfcheck stats [--json] FILE",
		"Prints what perf report --stats prints: records per type, then samples per event.", args, stdin, stderr)
	if code >= 0 {
		return code
	}
	f, err := openRecording(file, stdin)
	if err != nil {
		return errorf(stderr, name, "%v", err)
	}
	defer f.Close()
	st, rerr := countRecords(f)
	// perf checks the feature bit, which pipe streams never set.
	auxNote := !f.IsPipe() && f.Features().Has(perfdata.FeatureAuxtrace)

	if jsonOut {
		out := statsJSON{File: file, Total: st.total, ExcludesAux: auxNote, Types: []statsTypeJSON{}, Events: []statsEventJSON{}}
		for _, t := range sortedTypes(st) {
			n := st.byType[t]
			out.Types = append(out.Types, statsTypeJSON{Type: t.String(), ID: uint32(t), Count: n, Percent: 100 * float64(n) / float64(st.total)})
		}
		for i := range f.Events() {
			if i < len(st.samples) && (st.samples[i] > 0 || st.lostPerEvt[i] > 0) {
				out.Events = append(out.Events, statsEventJSON{Name: statsEventName(f, i), Samples: st.samples[i], LostSamples: st.lostPerEvt[i]})
			}
		}
		for _, t := range st.uncountedTypes() {
			out.Uncounted = append(out.Uncounted, statsTypeJSON{Type: t.String(), ID: uint32(t), Count: st.uncounted[t]})
		}
		out.Callchains = newCallchainsJSON(st.chains)
		out.Warnings = f.Warnings()
		if rerr != nil {
			out.Error = rerr.Error()
		}
		if err := writeJSON(stdout, out); err != nil {
			return errorf(stderr, name, "%v", err)
		}
	} else {
		writeStatsText(stdout, f, st, auxNote)
		writeUncounted(stdout, st)
		// stdout stays exactly perf's; what was tolerated goes to stderr.
		for _, w := range f.Warnings() {
			fmt.Fprintf(stderr, "perfcheck %s: warning: %s\n", name, w)
		}
	}
	if rerr != nil {
		return errorf(stderr, name, "%v", rerr)
	}
	return exitOK
}

// sortedTypes returns the counted record types in numeric order, as perf
// prints them, leaving out the types perf has no name for.
func sortedTypes(st *recordStats) []perfdata.RecordType {
	var ts []perfdata.RecordType
	for t, n := range st.byType {
		if n > 0 && hasPerfName(perfdata.RecordType(t)) {
			ts = append(ts, perfdata.RecordType(t))
		}
	}
	return ts
}

// hasPerfName reports whether perf_event__name knows t: perf skips the
// "UNKNOWN" ones when printing (they still count in TOTAL).
func hasPerfName(t perfdata.RecordType) bool {
	s := t.String()
	return len(s) < 5 || s[:5] != "type("
}

// writeStatsText prints exactly what perf report --stats prints
// (perf_session__fprintf_nr_events, events_stats__fprintf and
// evlist__fprintf_nr_events in perf 6.1, with empty lines skipped as its
// default --skip-empty does).
func writeStatsText(w io.Writer, f *recording, st *recordStats, auxNote bool) {
	msg := ""
	if auxNote {
		msg = " (excludes AUX area (e.g. instruction trace) decoded / synthesized events)"
	}
	fmt.Fprintf(w, "\nAggregated stats:%s\n", msg)
	fmt.Fprintf(w, "%16s events: %10d\n", "TOTAL", st.total)
	for _, t := range sortedTypes(st) {
		n := st.byType[t]
		fmt.Fprintf(w, "%16s events: %10d  (%4.1f%%)\n", t.String(), n, 100*float64(n)/float64(st.total))
	}
	for i := range f.Events() {
		if i >= len(st.samples) || st.samples[i] == 0 && st.lostPerEvt[i] == 0 {
			continue
		}
		fmt.Fprintf(w, "%s stats:\n", statsEventName(f, i))
		if st.samples[i] > 0 {
			fmt.Fprintf(w, "%16s events: %10d\n", "SAMPLE", st.samples[i])
		}
		if st.lostPerEvt[i] > 0 {
			fmt.Fprintf(w, "%16s events: %10d\n", "LOST_SAMPLES", st.lostPerEvt[i])
		}
	}
}

// statsEventName is the name perf report --stats prints for event i: the
// recorded name in file mode, but in pipe mode the name perf 6.1 derives
// from the attr, which it uses even when the stream names the event in
// EVENT_DESC or EVENT_UPDATE (see Attr.DerivedName).
func statsEventName(f *recording, i int) string {
	e := &f.Events()[i]
	// Tracepoints are the exception: perf names them from the tracing
	// data ("sched:sched_switch"), which is what the stream records too.
	if f.IsPipe() && e.Attr.Type != perfdata.AttrTypeTracepoint {
		return e.Attr.DerivedName()
	}
	return e.Name
}

// uncountedTypes returns the types of st.uncounted in numeric order.
func (st *recordStats) uncountedTypes() []perfdata.RecordType {
	ts := make([]perfdata.RecordType, 0, len(st.uncounted))
	for t := range st.uncounted {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// writeUncounted prints, after perf's figures, the records perf does not
// count; perf report stops at the first of them ("failed to process
// type"), so its output never has these lines.
func writeUncounted(w io.Writer, st *recordStats) {
	if len(st.uncounted) == 0 {
		return
	}
	fmt.Fprintf(w, "\nNot counted (types perf does not read):\n")
	for _, t := range st.uncountedTypes() {
		fmt.Fprintf(w, "%16s events: %10d\n", t.String(), st.uncounted[t])
	}
	if c := newCallchainsJSON(st.chains); c != nil {
		fmt.Fprintf(w, "simpleperf:CALLCHAIN: %s\n", c)
	}
}

// callchainsJSON is what simpleperf's CALLCHAIN records were used for
// (perfdata.Callchains): a joined chain gives its sample's user
// callchain, as simpleperf's record command joins it; the chains as
// unwound before joining, and joined ones no sample met, are skipped.
// Whether a chain lengthened its sample's callchain is known only where
// the samples' callchains are read (check, script), not here.
type callchainsJSON struct {
	Joined    int `json:"joined"`
	Originals int `json:"originals_skipped"`
	Unmatched int `json:"unmatched_skipped"`
}

// newCallchainsJSON returns c's counts, nil when there were none (every
// recording perf wrote).
func newCallchainsJSON(c perfdata.Callchains) *callchainsJSON {
	if c == (perfdata.Callchains{}) {
		return nil
	}
	return &callchainsJSON{Joined: c.Joined, Originals: c.Originals, Unmatched: c.Unmatched}
}

func (c *callchainsJSON) String() string {
	return fmt.Sprintf("%d joined chains used for their samples' user callchains; skipped: %d chains as unwound before joining, %d joined chains no sample met",
		c.Joined, c.Originals, c.Unmatched)
}
