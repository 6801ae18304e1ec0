// Package pprofout converts a checked perf recording (a check.Result) into a
// pprof profile (profile.proto, as github.com/google/pprof reads and
// writes it) without breaking the check's promise: a frame in a binary
// that is not the one that ran is never given a name.
//
// Write encodes the profile and writes it gzipped, streaming its samples,
// so that a profile of millions of stacks is never held in memory; Convert
// builds the same profile in google/pprof's structures for a caller that
// edits it, and WriteProfile writes such a profile. docs/pprof.md maps
// each perf concept to its pprof counterpart. In short:
//
//   - two sample types per event: its sample count ("samples"/"count", or
//     "EVENT_samples" when the recording has several events) and its period
//     in the event's unit ("cpu-clock"/"nanoseconds", "cycles"/"count"),
//     as PeriodUnit says;
//   - one Mapping per DSO, with the recorded build-id, and Has* flags set only
//     when the locations really carry that information;
//   - one Location per distinct (DSO, offset) of the check, its Lines the
//     check's frames (innermost inlined first) for trusted DSOs; a location
//     that has no name (refused DSOs: mismatch, missing, replaced; memory
//     without a file; addresses without a symbol) gets one Line whose
//     function is an honest label, "[mismatch] libfoo.so.1", so that its
//     weight stays in every pprof view, flame graph included, while its
//     mapping keeps the build-id and no Has* flag, for pprof to symbolize
//     later. A refused DSO's Mapping.File gets the verdict appended so that
//     no tool opens the wrong file at the path;
//   - labels comm (string), pid and tid (numbers), and trusted ("yes"/"no").
//
// # Security
//
// Write and Convert open no file themselves; it reads the Result, and through
// Result.ExecSegment the program headers of the trusted binaries the check
// found (each still carrying the build-id found for it), where the
// recording gives no executable mapping to lay a DSO out by. Strings from
// the recording (paths, comms, names) are copied into the profile as they
// are.
package pprofout

import (
	"fmt"
	"io"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/perfdata"
)

// Options tune Write and Convert.
type Options struct {
	// Comments are added to the profile (pprof -comments shows them).
	Comments []string
	// DurationNanos and TimeNanos are copied into the profile when set.
	DurationNanos int64
	TimeNanos     int64
}

// PeriodUnit is the unit of a sample's period for an event: the software
// clocks cpu-clock and task-clock count nanoseconds
// (PERF_COUNT_SW_CPU_CLOCK and PERF_COUNT_SW_TASK_CLOCK, whose period perf
// sets in ns: cpu_clock_event_init in kernel/events/core.c); every other
// event (hardware counters, tracepoints, page faults) counts occurrences.
func PeriodUnit(a *perfdata.Attr) string {
	const (
		typeSoftware = 1 // PERF_TYPE_SOFTWARE
		cpuClock     = 0 // PERF_COUNT_SW_CPU_CLOCK
		taskClock    = 1 // PERF_COUNT_SW_TASK_CLOCK
	)
	if a.Type == typeSoftware && (a.Config == cpuClock || a.Config == taskClock) {
		return "nanoseconds"
	}
	return "count"
}

// Convert builds res's profile in google/pprof's structures, for a caller
// that edits or merges it; google/pprof encodes it to the very protobuf
// bytes that Write writes. Those structures hold every stack several times (a
// location pointer per frame in each Sample, the location IDs again and the
// whole encoded profile while it is written): to write a large recording's
// profile, Write, which holds none of them, is the way. It uses
// res.Aggregates, so res must be analyzed without check.Options.Replay,
// OnSample or ReportOnly, which keep none.
func Convert(res *check.Result, opts Options) (*profile.Profile, error) {
	t := buildTables(res)
	p := &profile.Profile{
		DurationNanos:     opts.DurationNanos,
		TimeNanos:         opts.TimeNanos,
		Comments:          opts.Comments,
		DefaultSampleType: t.defaultType,
	}
	for _, st := range t.sampleTypes {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: st.typ, Unit: st.unit})
	}
	if pt := t.periodType; pt != nil {
		p.PeriodType = &profile.ValueType{Type: pt.typ, Unit: pt.unit}
	}
	convertTables(p, t)
	if err := convertSamples(p, res); err != nil {
		return nil, err
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("pprofout: %w", err)
	}
	return p, nil
}

// convertTables adds t's mappings, functions and locations to p.
func convertTables(p *profile.Profile, t *tables) {
	for i, m := range t.mappings {
		p.Mapping = append(p.Mapping, &profile.Mapping{ID: uint64(i + 1), Start: m.start, Limit: m.limit, Offset: m.offset,
			File: m.file, BuildID: m.buildID, HasFunctions: m.hasFunctions, HasFilenames: m.hasFilenames,
			HasLineNumbers: m.hasLineNumbers, HasInlineFrames: m.hasInlineFrames})
	}
	for i, f := range t.functions {
		p.Function = append(p.Function, &profile.Function{ID: uint64(i + 1), Name: f.name, SystemName: f.systemName, Filename: f.filename})
	}
	for i, l := range t.locations {
		pl := &profile.Location{ID: uint64(i + 1), Mapping: p.Mapping[l.mapping-1], Address: l.address}
		for _, ln := range t.lines[t.lineAt[i]:t.lineAt[i+1]] {
			pl.Line = append(pl.Line, profile.Line{Function: p.Function[ln.function-1], Line: ln.line, Column: ln.column})
		}
		p.Location = append(p.Location, pl)
	}
}

// convertSamples adds res's samples to p, whose locations are the check's
// in its order. Samples of one thread share their label maps (nothing
// changes a sample's labels once built), so a profile with millions of
// samples holds a few label maps per thread, not per sample.
func convertSamples(p *profile.Profile, res *check.Result) error {
	type labelKey struct {
		threadKey
		trusted bool
	}
	type labels struct {
		str map[string][]string
		num map[string][]int64
	}
	shared := map[labelKey]labels{}
	return eachSample(res, len(p.SampleType)/2, func(s *sample) error {
		lk := labelKey{threadKey{s.comm, s.pid, s.tid}, s.stack.Trusted}
		l, ok := shared[lk]
		if !ok {
			l = labels{str: map[string][]string{"trusted": {check.YesNo(s.stack.Trusted)}},
				// Signed, as perf prints them: the kernel's pid is -1.
				num: map[string][]int64{"pid": {int64(int32(s.pid))}, "tid": {int64(int32(s.tid))}}}
			if s.comm != "" {
				l.str["comm"] = []string{s.comm}
			}
			shared[lk] = l
		}
		ps := &profile.Sample{
			Value:    append([]int64(nil), s.values...),
			Location: make([]*profile.Location, len(s.stack.Locations())),
			Label:    l.str,
			NumLabel: l.num,
		}
		for i, l := range s.stack.Locations() {
			// By the check's dense ID (Location.ID is its index in
			// res.Locations plus one, and only Finish makes stacks
			// with locations), not a map lookup per frame.
			ps.Location[i] = p.Location[l.ID-1]
		}
		p.Sample = append(p.Sample, ps)
		return nil
	})
}

// Summary is what a profile written by Write holds.
type Summary struct {
	SampleTypes []string // "type/unit", in order
	// Samples are the pprof samples: one per distinct stack of each
	// thread (comm, pid, tid).
	Samples   int
	Locations int
	Functions int
	Mappings  int
	// Unsymbolized are the files of the mappings that carry no function
	// name, left for pprof to symbolize by build-id.
	Unsymbolized []string
}

// Write writes res's profile to w, gzipped, as pprof reads it: the
// profile Convert builds, encoded as google/pprof encodes it, but
// streamed. Each pprof sample is encoded and compressed as it is built
// from the check's aggregates, then the mappings, locations, functions
// and string table; what Write holds besides res is those tables (which
// grow with distinct locations and functions, not with stacks), one
// stack's samples and the compressor's window.
func Write(w io.Writer, res *check.Result, opts Options) (Summary, error) {
	t := buildTables(res)
	zw := gzip.NewWriter(w)
	e := newEncoder(zw)
	for _, st := range t.sampleTypes {
		e.valueType(profSampleType, st)
	}
	n := 0
	err := eachSample(res, len(t.sampleTypes)/2, func(s *sample) error {
		n++
		return e.sample(s)
	})
	if err == nil {
		e.mappings(t)
		e.locations(t)
		e.functions(t)
		e.trailer(t, opts)
		err = e.err
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Summary{}, err
	}
	return t.summary(n), nil
}

// summary is the Summary of a profile of t's tables and n samples.
func (t *tables) summary(n int) Summary {
	s := Summary{Samples: n, Locations: len(t.locations), Functions: len(t.functions), Mappings: len(t.mappings)}
	for _, st := range t.sampleTypes {
		s.SampleTypes = append(s.SampleTypes, st.typ+"/"+st.unit)
	}
	for _, m := range t.mappings {
		if !m.hasFunctions {
			s.Unsymbolized = append(s.Unsymbolized, m.file)
		}
	}
	return s
}

// WriteProfile writes p to w as Profile.Write does (a gzipped protobuf),
// compressing with klauspost/compress's gzip rather than compress/gzip:
// on a large profile the standard compressor costs more than building the
// profile (docs/pprof.md, "Compression"; figures in bench/README.md).
func WriteProfile(w io.Writer, p *profile.Profile) error {
	zw := gzip.NewWriter(w)
	if err := p.WriteUncompressed(zw); err != nil {
		zw.Close()
		return err
	}
	return zw.Close()
}
