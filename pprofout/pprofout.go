// Package pprofout converts a checked perf recording (a check.Result) into a
// pprof profile (github.com/google/pprof/profile) without breaking the
// check's promise: a frame in a binary that is not the one that ran is never
// given a name.
//
// Convert builds the profile; Write converts and writes it gzipped, after
// Profile.CheckValid; WriteProfile writes a converted one. docs/pprof.md
// maps each perf concept to its pprof counterpart. In short:
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
// Convert opens no file itself; it reads the Result, and through
// Result.ExecSegment the program headers of the trusted binaries the check
// found (each still carrying the build-id found for it), where the
// recording gives no executable mapping to lay a DSO out by. Strings from
// the recording (paths, comms, names) are copied into the profile as they
// are.
package pprofout

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/symbolize"
)

// Options tune Convert.
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

// refused reports whether a DSO's frames must stay unnamed in the profile:
// its verdict refuses names. With check.Options.TrustPaths the check may
// still have named them; the profile never does, since pprof has no
// per-frame trust mark to carry.
func refused(d *check.DSO) bool { return !d.Trusted() }

// addrKind reports whether the check's offsets in d are addresses (the
// kernel, JIT code and file-less memory) rather than file offsets.
func addrKind(d *check.DSO) bool {
	switch d.Kind {
	case dso.File, dso.VDSO, dso.Module:
		return false
	}
	return true
}

// fileBase is the lowest synthetic base given to a file-backed DSO.
const fileBase = 1 << 32

// Convert builds a pprof profile from res. It uses res.Aggregates, so it
// needs no per-sample data (check.Options.KeepSamples is not needed).
func Convert(res *check.Result, opts Options) (*profile.Profile, error) {
	b := &builder{
		res: res,
		p: &profile.Profile{
			DurationNanos: opts.DurationNanos,
			TimeNanos:     opts.TimeNanos,
			Comments:      opts.Comments,
		},
		funcs: map[profile.Function]*profile.Function{},
		maps:  map[*check.DSO]*profile.Mapping{},
		bases: map[*check.DSO]uint64{},
		next:  fileBase,
	}
	nev := max(res.NumEvents(), 1) // a profile has at least one sample type
	b.addSampleTypes(nev)
	dsos, spans := usedDSOs(res)
	for _, d := range dsos {
		b.addMapping(d, spans[d])
	}
	b.addLocations()
	b.pointAtFoundFiles(dsos)
	b.addSamples(nev)
	if err := b.p.CheckValid(); err != nil {
		return nil, fmt.Errorf("pprofout: %w", err)
	}
	return b.p, nil
}

// builder holds a profile being built and what its steps share.
type builder struct {
	res   *check.Result
	p     *profile.Profile
	funcs map[profile.Function]*profile.Function // by value, as pprof's own builders dedup
	maps  map[*check.DSO]*profile.Mapping
	bases map[*check.DSO]uint64 // address of offset 0, for file-backed DSOs
	next  uint64                // synthetic base of the next file-backed DSO without a mapping
}

// addSampleTypes gives the profile two sample types per event (samples,
// period) and, with one event, its period type.
func (b *builder) addSampleTypes(nev int) {
	p := b.p
	events := b.res.EventInfo
	for i := 0; i < nev; i++ {
		name := b.res.EventName(i)
		unit := "count"
		if i < len(events) {
			unit = PeriodUnit(&events[i].Attr)
		}
		samples := "samples"
		if nev > 1 {
			samples = name + "_samples"
		}
		p.SampleType = append(p.SampleType,
			&profile.ValueType{Type: samples, Unit: "count"},
			&profile.ValueType{Type: name, Unit: unit})
		if i == 0 {
			p.DefaultSampleType = name
		}
	}
	if nev == 1 {
		p.PeriodType = &profile.ValueType{Type: p.SampleType[1].Type, Unit: p.SampleType[1].Unit}
	}
}

// span is the range of a DSO's sampled offsets.
type span struct{ lo, hi uint64 }

// usedDSOs returns the DSOs of res's locations in the order of their
// mappings, and the range of each one's offsets.
func usedDSOs(res *check.Result) ([]*check.DSO, map[*check.DSO]*span) {
	spans := map[*check.DSO]*span{}
	var dsos []*check.DSO
	for _, l := range res.Locations {
		s := spans[l.DSO]
		if s == nil {
			s = &span{lo: l.Offset, hi: l.Offset}
			spans[l.DSO] = s
			dsos = append(dsos, l.DSO)
		}
		s.lo = min(s.lo, l.Offset)
		s.hi = max(s.hi, l.Offset)
	}
	// Mappings in a stable order: the check's (most hit first), then the
	// rest by path.
	order := map[*check.DSO]int{}
	for i, d := range res.DSOs {
		order[d] = i
	}
	sort.SliceStable(dsos, func(i, j int) bool {
		oi, iok := order[dsos[i]]
		oj, jok := order[dsos[j]]
		if iok != jok {
			return iok
		}
		if iok && oi != oj {
			return oi < oj
		}
		return dsos[i].Path < dsos[j].Path
	})
	// pprof takes the first mapping for the main binary (its "File:"
	// line, and the default for -symbolize). perf has no such notion; the
	// executable of the busiest command is the best guess: a comm is the
	// first 15 bytes of the executable's base name (TASK_COMM_LEN).
	if main := mainDSO(res, dsos); main > 0 {
		d := dsos[main]
		copy(dsos[1:main+1], dsos[:main])
		dsos[0] = d
	}
	return dsos, spans
}

// addMapping adds d's mapping, laid out over its sampled offsets s.
func (b *builder) addMapping(d *check.DSO, s *span) {
	m := &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: d.Path}
	if len(d.BuildID) > 0 {
		m.BuildID = d.BuildID.String()
	} else if d.Verdict == check.Unverified && len(d.FoundBuildID) > 0 {
		// No build-id recorded, but the file at the path shows no
		// sign of change and is what the names come from: its
		// build-id is the best identity known, and matches the names.
		m.BuildID = d.FoundBuildID.String()
	}
	if addrKind(d) {
		layOutAddresses(m, d, s)
	} else if mr, ok := b.res.FirstMapping(d); ok && realRange(mr, s.lo, s.hi) {
		b.bases[d] = layOutRecorded(m, mr, s)
	} else {
		b.bases[d] = b.layOutSynthetic(m, d, s)
	}
	if refused(d) {
		// The file at the recorded path is not the binary that ran
		// (or there is none): a symbolizer that opens m.File without
		// checking build-ids (go tool pprof's does not) would name
		// these frames from the wrong file. The verdict appended makes
		// the name one that opens nothing, while the build-id still
		// lets pprof find the right binary ($PPROF_BINARY_PATH/<build-id>/...).
		m.File = d.Path + " [" + d.Verdict.String() + "]"
	}
	b.maps[d] = m
	b.p.Mapping = append(b.p.Mapping, m)
}

// layOutAddresses lays out the mapping of a DSO whose offsets are
// addresses: they are real, so they are kept, in a mapping that spans them.
func layOutAddresses(m *profile.Mapping, d *check.DSO, s *span) {
	m.Start = s.lo &^ 0xfff
	m.Limit = (s.hi | 0xfff) + 1
	if d.Kind == dso.Kernel {
		// perf's kernel map: an address is its own offset.
		m.Offset = m.Start
	}
	if m.Limit == 0 { // the top page
		m.Limit = ^uint64(0)
	}
}

// layOutRecorded lays out a file-backed mapping as the recording's own:
// the first executable mapping of this DSO (MMAP2 start, end, pgoff),
// widened by whole pages if a sampled offset lies outside it (another
// segment of the same file). Addresses are what that process ran at;
// Address - Start + Offset is still the file offset, which is all pprof's
// symbolizers need. It returns the address of offset 0.
func layOutRecorded(m *profile.Mapping, mr addrspace.Mapping, s *span) uint64 {
	base := mr.Start - mr.Pgoff // address of offset 0 (mod 2^64)
	m.Start, m.Limit, m.Offset = mr.Start, mr.Limit, mr.Pgoff
	if lo := (base + s.lo) &^ 0xfff; lo < m.Start {
		m.Offset -= m.Start - lo
		m.Start = lo
	}
	if hi := ((base + s.hi) | 0xfff) + 1; hi > m.Limit {
		m.Limit = hi
	}
	return base
}

// layOutSynthetic lays out a file-backed mapping the recording gives no
// usable range for. A DSO is shared by every process that mapped it, each
// at its own address; the check keeps file offsets. Each DSO gets its own
// range, laid out like its executable mapping (Start at the page of the
// text segment's file offset, Offset that file offset), so that pprof's
// symbolizers, given the same binary later, find file offset = Address -
// Start + Offset and the virtual address from the program headers. It
// returns the address of offset 0.
func (b *builder) layOutSynthetic(m *profile.Mapping, d *check.DSO, s *span) uint64 {
	pg := textPageOffset(b.res, d, s.lo)
	base := b.next
	m.Start = base + pg
	m.Offset = pg
	m.Limit = base + ((s.hi | 0xfff) + 1)
	if m.Limit <= m.Start {
		m.Limit = m.Start + 0x1000
	}
	b.next = (m.Limit + 1<<32) &^ (1<<32 - 1)
	return base
}

// addLocations adds a location per location of the check, in its order
// (p.Location[i] is the profile location of res.Locations[i]), with its
// frames when its DSO is trusted.
func (b *builder) addLocations() {
	p := b.p
	for _, l := range b.res.Locations {
		m := b.maps[l.DSO]
		pl := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m}
		if addrKind(l.DSO) {
			pl.Address = l.Offset
		} else {
			pl.Address = b.bases[l.DSO] + l.Offset
		}
		if !refused(l.DSO) {
			b.addLines(pl, m, l)
		}
		if len(pl.Line) == 0 {
			// No name may be given here (or none is known): a
			// location without a function vanishes from pprof's stack
			// views (flame graph, peek, traces), its weight drawn as
			// its caller's own. An honest label keeps it in every
			// view; the mapping's Has* flags stay unset, so pprof
			// still symbolizes it when it finds the binary by build-id.
			pl.Line = []profile.Line{{Function: b.labelFunction(l.DSO)}}
		}
		p.Location = append(p.Location, pl)
	}
}

// addLines gives pl the frames the check named at l, innermost first, and
// sets the Has* flags of m that they justify.
func (b *builder) addLines(pl *profile.Location, m *profile.Mapping, l *check.Location) {
	for _, f := range l.Frames {
		if f.Name() == "" {
			continue
		}
		pl.Line = append(pl.Line, profile.Line{Function: b.function(f), Line: int64(f.Line), Column: int64(f.Column)})
		m.HasFunctions = true
		if f.File != "" {
			m.HasFilenames = true
		}
		if f.Line > 0 {
			m.HasLineNumbers = true
		}
		if f.Inlined {
			m.HasInlineFrames = true
		}
	}
}

// label is the name pprof shows for the locations of d that have no
// function: "[verdict] base" for a DSO whose names are refused
// ("[mismatch] libfoo.so.1"), "[base]" for memory without a file and for
// addresses a trusted binary has no symbol for ("[libc.so.6]", as pprof
// itself names an unsymbolized mapping; bracketed names such as
// "[kernel.kallsyms]" or "[unknown]" as they are). One label per DSO and
// verdict, not per address: the weight of an untrusted binary stays in one
// node that pprof's graph pruning cannot scatter, as `perfcheck top`
// groups it; the addresses stay in the locations.
func label(d *check.DSO) string {
	base := dso.BaseName(d.Path)
	if refused(d) {
		return "[" + d.Verdict.String() + "] " + base
	}
	if strings.HasPrefix(base, "[") {
		return base
	}
	return "[" + base + "]"
}

// labelFunction returns the function named label(d), added on first use.
// Its SystemName is the DSO's full path with the verdict, so that two
// DSOs of one base name stay two functions in the profile.
func (b *builder) labelFunction(d *check.DSO) *profile.Function {
	key := profile.Function{Name: label(d), SystemName: d.Path}
	if refused(d) {
		key.SystemName = "[" + d.Verdict.String() + "] " + d.Path
	}
	return b.addFunction(key)
}

// addFunction returns the profile's function equal to key, added with
// the next ID on first use: pprof dedups functions by value.
func (b *builder) addFunction(key profile.Function) *profile.Function {
	if fn := b.funcs[key]; fn != nil {
		return fn
	}
	fn := key
	fn.ID = uint64(len(b.p.Function) + 1)
	b.funcs[key] = &fn
	b.p.Function = append(b.p.Function, &fn)
	return &fn
}

// function returns the profile's function for frame f, added on first use.
func (b *builder) function(f symbolize.Frame) *profile.Function {
	key := profile.Function{Name: f.Name(), SystemName: f.RawName, Filename: f.File}
	if key.SystemName == "" {
		key.SystemName = key.Name
	}
	return b.addFunction(key)
}

// pointAtFoundFiles makes the mapping of a trusted DSO that was found
// elsewhere than at its path (perf's cache, a debug directory,
// debuginfod) and got no names from us name the verified file, not
// whatever is at the path now.
func (b *builder) pointAtFoundFiles(dsos []*check.DSO) {
	for _, d := range dsos {
		m := b.maps[d]
		if !refused(d) && !m.HasFunctions && d.Verdict == check.Verified && d.FoundPath != "" && !addrKind(d) {
			m.File = d.FoundPath
		}
	}
}

// addSamples adds a sample per (stack, comm, pid, tid), the events'
// values side by side. Samples of one thread share their label maps
// (nothing changes a sample's labels once built), so a profile with
// millions of samples holds a few label maps per thread, not per sample.
func (b *builder) addSamples(nev int) {
	p := b.p
	type sampleKey struct {
		comm     string
		pid, tid uint32
	}
	type labelKey struct {
		sampleKey
		trusted bool
	}
	type labels struct {
		str map[string][]string
		num map[string][]int64
	}
	shared := map[labelKey]labels{}
	// Aggregates come ordered by stack first, so a stack's samples are
	// found among its own: the map is cleared when the stack changes.
	samples := map[sampleKey]*profile.Sample{}
	stack := -1
	for _, ag := range b.res.Aggregates() {
		if ag.Stack.ID != stack {
			clear(samples)
			stack = ag.Stack.ID
		}
		k := sampleKey{ag.Comm, ag.PID, ag.TID}
		s := samples[k]
		if s == nil {
			lk := labelKey{k, ag.Stack.Trusted}
			l, ok := shared[lk]
			if !ok {
				l = labels{str: map[string][]string{"trusted": {check.YesNo(ag.Stack.Trusted)}},
					// Signed, as perf prints them: the kernel's pid is -1.
					num: map[string][]int64{"pid": {int64(int32(ag.PID))}, "tid": {int64(int32(ag.TID))}}}
				if ag.Comm != "" {
					l.str["comm"] = []string{ag.Comm}
				}
				shared[lk] = l
			}
			s = &profile.Sample{
				Value:    make([]int64, 2*nev),
				Location: make([]*profile.Location, len(ag.Stack.Locations())),
				Label:    l.str,
				NumLabel: l.num,
			}
			for i, l := range ag.Stack.Locations() {
				// By the check's dense ID (Location.ID is its index in
				// res.Locations plus one, and only Finish makes stacks
				// with locations), not a map lookup per frame.
				s.Location[i] = p.Location[l.ID-1]
			}
			samples[k] = s
			p.Sample = append(p.Sample, s)
		}
		s.Value[2*ag.Event] += int64(ag.Samples)
		s.Value[2*ag.Event+1] += int64(ag.Period)
	}
}

// Write converts res and writes the profile to w, gzipped, as pprof reads it.
func Write(w io.Writer, res *check.Result, opts Options) error {
	p, err := Convert(res, opts)
	if err != nil {
		return err
	}
	return WriteProfile(w, p)
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

// realRange reports whether the recorded mapping mr can carry the sampled
// offsets lo..hi: a real, non-empty range in which every one of them has
// an address (offsets below the mapping's pgoff must not reach below
// address 0, nor the highest past the top of the address space).
func realRange(mr addrspace.Mapping, lo, hi uint64) bool {
	if mr.Limit <= mr.Start {
		return false
	}
	if lo < mr.Pgoff && mr.Pgoff-lo > mr.Start {
		return false // below address 0
	}
	if hi > mr.Pgoff && hi-mr.Pgoff > ^uint64(0)-0x2000-mr.Start {
		return false // past the top
	}
	return true
}

// mainDSO returns the index in dsos of the busiest command's executable, or
// -1 when none is recognized.
func mainDSO(res *check.Result, dsos []*check.DSO) int {
	byComm := map[string]uint64{}
	for _, ag := range res.Aggregates() {
		byComm[ag.Comm] += ag.Samples
	}
	var comm string
	var most uint64
	for c, n := range byComm {
		if n > most || n == most && c < comm {
			comm, most = c, n
		}
	}
	if comm == "" {
		return -1
	}
	for i, d := range dsos {
		if d.Kind != dso.File {
			continue
		}
		base := dso.BaseName(d.Path)
		if base == comm || len(comm) >= 15 && strings.HasPrefix(base, comm) {
			return i
		}
	}
	return -1
}

// textPageOffset is the file offset, rounded down to a page, at which the
// loader maps the executable segment that holds offset lo: what perf
// recorded as the pgoff of the sampled mapping. The check gives it for a
// verified binary (Result.ExecSegment); otherwise (refused or unreadable)
// it is lo's page, which is enough for pprof, whose symbolizer picks the
// segment by file offset.
func textPageOffset(res *check.Result, d *check.DSO, lo uint64) uint64 {
	if off, ok := res.ExecSegment(d, lo); ok {
		return off &^ 0xfff
	}
	return lo &^ 0xfff
}
