package check

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/symbolize"
)

// Location is one distinct (DSO, offset) of the recording, shared by every
// stack that passes through it.
type Location struct {
	ID     int    // 1-based, dense, stable within a Result
	DSO    *DSO   //
	Offset uint64 // file offset; for kernel, JIT and file-less memory, the address
	// Frames are the source frames at this location, leaf (innermost
	// inline) first; nil when the DSO is not symbolized (its verdict
	// refuses names, or symbolization failed: see SymbolError).
	Frames      []symbolize.Frame
	SymbolError string // why a symbolized DSO gave no frames here, "" otherwise
	// SymOffset is how far the location lies past the start of the
	// symbol-table entry (ELF symbol, kallsyms or module symbol, perf
	// map entry) that covers it, as perf script's symoff prints it
	// ("main+0x1b"); valid when HasSymOffset, which needs Frames.
	SymOffset    uint64
	HasSymOffset bool
}

// Trusted reports whether the location keeps a sample trusted.
func (l *Location) Trusted() bool { return l.DSO.Verdict.Trusted() }

// String is the location as script and top print it: "function (dso)" for a
// named frame, "dso+0xoffset [verdict]" otherwise (and "function (dso)
// [verdict]" for an untrusted DSO named because of Options.TrustPaths).
func (l *Location) String() string {
	if len(l.Frames) > 0 {
		f := l.Frames[len(l.Frames)-1].Name()
		if f != "" {
			if !l.Trusted() {
				// Only with Options.TrustPaths: named from a file that
				// is not the one that ran, and marked so.
				return f + " (" + l.DSO.Path + ") [" + l.DSO.Verdict.String() + "]"
			}
			return f + " (" + l.DSO.Path + ")"
		}
	}
	return l.raw()
}

// raw is "dso+0xoffset", with the verdict in brackets when the DSO is not
// trusted or not named.
func (l *Location) raw() string {
	s := dso.BaseName(l.DSO.Path) + "+0x" + strconv.FormatUint(l.Offset, 16)
	if !l.DSO.Trusted() || l.DSO.Verdict == NoFile {
		s += " [" + l.DSO.Verdict.String() + "]"
	}
	return s
}

// Stack is one distinct resolved stack, leaf first.
type Stack struct {
	ID          int  // 1-based
	Trusted     bool // every location is trusted
	LeafTrusted bool

	// The stack's locations are set.ptrs[first:first+n], once built.
	n     int32
	first int
	set   *stackSet // nil for a Stack not made by finish
}

// Locations returns the stack's locations, leaf first. The slice is shared
// by every caller: do not modify it. It is safe for concurrent use.
//
// The first call on any stack of a Result builds every stack's location
// pointers, one per frame, the largest block a Result holds: `perfcheck
// check` never asks for them, so it does not pay for them.
func (s *Stack) Locations() []*Location {
	if s.set == nil {
		return nil
	}
	s.set.once.Do(s.set.expand)
	end := s.first + int(s.n)
	return s.set.ptrs[s.first:end:end]
}

// stackSet is what a Result's stacks need to build their location
// pointers on first use.
type stackSet struct {
	once sync.Once
	// mu guards refs, which expand drops, against AppendLocations.
	mu     sync.RWMutex
	refs   [][]int32   // each stack's location indexes (the session's), until expanded
	locs   []Location  // the Result's locations, in one block: Locations[i] is &locs[i]
	frames int         // total frames of the stacks
	ptrs   []*Location // every stack's location pointers, in stack order
}

// expand builds every stack's location pointers, in one array, and drops
// the location indexes (the session's chunks are then garbage).
func (a *stackSet) expand() {
	ptrs := locationPtrs(a.frames)
	next := 0
	for _, refs := range a.refs {
		for _, r := range refs {
			ptrs[next] = &a.locs[r]
			next++
		}
	}
	a.mu.Lock()
	a.ptrs, a.refs = ptrs, nil
	a.mu.Unlock()
}

// AppendLocations appends the stack's locations, leaf first, to dst and
// returns it. Unlike Locations it builds nothing for the Result's other
// stacks: a caller that walks every stack once (a pprof profile) needs no
// pointer per frame of them all. It is safe for concurrent use.
func (s *Stack) AppendLocations(dst []*Location) []*Location {
	a := s.set
	if a == nil {
		return dst
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.refs == nil {
		return append(dst, a.ptrs[s.first:s.first+int(s.n)]...)
	}
	for _, r := range a.refs[s.ID-1] {
		dst = append(dst, &a.locs[r])
	}
	return dst
}

// Aggregate is the samples one thread took with one stack for one event.
type Aggregate struct {
	Stack   *Stack
	Event   int    // index of the event in the recording
	PID     uint32 // as recorded, as perfdata reads it: int32(PID) is perf's signed pid (-1 for the kernel)
	TID     uint32
	Comm    string
	Samples uint64
	Period  uint64
}

// Sample is one sample as Result.EachSample reads it again.
type Sample struct {
	Event  int
	PID    uint32 // as in Aggregate
	TID    uint32
	CPU    uint32
	Time   uint64
	Period uint64
	Comm   string
	// Stack is the sample's stack, its locations and its trust; it is
	// not one of Result.Stacks (ID 0), and it and its Locations are
	// reused like the Sample.
	Stack *Stack
	// IPs are the sample's addresses as recorded, one per location of
	// Stack, leaf first: the runtime (virtual) address where the
	// Location has the file offset. It is reused like the Sample.
	IPs []uint64
	// Addr is PERF_SAMPLE_ADDR (a data address with perf record -d),
	// 0 when the sample's event did not record it.
	Addr uint64
	// Record is the sample as read, with every field it recorded.
	Record *perfdata.Sample
	// AddrLocation is where Addr lay in the process's address space at
	// the sample's time, symbolized under the same verdict rules as the
	// stack's locations (from the DSO's code and data symbols), for the
	// events whose addresses perf script names with sym and dso (page
	// faults, branch tracing: sample_addr_correlates_sym in perf's
	// tools/perf/util/event.c); nil for the others.
	AddrLocation *Location
	// Branches are where each entry of the sample's branch stack
	// (Record.Branches) leads from and to, in its order, located and
	// named as AddrLocation is, with Options.Branches; nil without. It
	// is reused like the Sample.
	Branches []BranchLocation
	// Events are the recording's events as known when the sample was
	// read (a stream describes them as it goes); Event indexes them.
	Events []perfdata.Event
	// Features are the recording's header features as known when the
	// sample was read (a stream sends them before its samples): its
	// architecture, its tracepoint formats.
	Features *perfdata.Features
}

// Result is the outcome of a check: DSOs with verdicts, distinct stacks and
// locations with trust-marked frames, and per-thread aggregates.
type Result struct {
	File      string
	EventInfo []perfdata.Event // the recording's events (attr, ids, name) by index; EventName names them
	DSOs      []*DSO           // every DSO a sample touches, most hit first
	Stacks    []*Stack
	Locations []*Location

	Samples              uint64
	TrustedSamples       uint64
	UntrustedLeafSamples uint64
	UntrustedAnySamples  uint64
	// Strict are the same figures under --strict's policy, where an
	// unverified DSO is not trusted either.
	Strict TrustFigures

	// RecordingEnd is when the recording ended, in wall time: its last
	// sample's time by the recording's own clock when it has a wall-clock
	// reference, else the file's modification time (perf rewrites the
	// header last); zero when unknown (a stream from a pipe).
	RecordingEnd time.Time
	// RecordingEndSource says where RecordingEnd comes from:
	// EndFromClock (the recording's own clock) or EndFromMTime (the
	// file's modification time); "" when it is unknown.
	RecordingEndSource string
	// KernelRelease is the recording's kernel release (the OSRELEASE
	// feature); "" when unknown.
	KernelRelease string
	// TraceEvents are the recording's tracepoint formats (the TRACING_DATA
	// feature), read with Options.Replay or OnSample when an event is a
	// tracepoint; TraceErr says why they could not be read.
	TraceEvents []perfdata.TraceEvent
	TraceErr    error
	// TracePrintk are the tracing data's printk strings by kernel
	// address (perfdata's Features.TracePrintk), read with TraceEvents;
	// TracePrintkErr says why they could not be read.
	TracePrintk    map[uint64]string
	TracePrintkErr error
	// Arch is the recording's machine architecture as uname names it
	// (the ARCH feature: "x86_64"); "" when unknown.
	Arch string
	// Clock converts perf time to wall time (the CLOCK_DATA feature); nil
	// when the recording has none.
	Clock *perfdata.ClockData
	// ThisBoot says that the recording was made on this host since it
	// last booted: its host name and kernel release are this machine's
	// and its time is after the boot. Only then do its pids name this
	// machine's processes, and are their /proc/PID/root looked under
	// (buildidcache.Query.PID, Cache.AddRecordedMapping).
	ThisBoot bool

	// Partial is set when reading stopped at an error before the end of
	// the recording (a truncated or corrupt file): everything here
	// describes the records before it. ReadErr is that error (it names
	// the file and the byte offset).
	Partial bool
	ReadErr error
	// ReadWarnings are what the reader tolerated (perfdata's Warnings): a
	// recording perf record did not finish (killed before it rewrote the
	// header), a last record cut short, bytes after a pipe stream.
	ReadWarnings []string

	// StackUserSamples counts samples recorded with a user stack copy
	// (--call-graph dwarf) that could not be unwound at all (not x86-64,
	// or no user registers): DSOs reached only there are not seen.
	StackUserSamples uint64
	// Changed, with Options.OnSample, lists the DSOs whose verdict at the
	// end differs from the one their samples were handed over with.
	Changed []VerdictChange

	// UnprovenUnwinds counts --call-graph dwarf samples whose unwinding
	// stopped at a binary that could not be proven to be the one that ran
	// (its CFI could invent callers): their outer callers are not seen.
	UnprovenUnwinds uint64

	aggOnce sync.Once
	aggs    []Aggregate
	aggSrc  *aggTable // the session's aggregates, until Aggregates builds aggs
	// aggMu guards aggSrc and aggs for eachAggregate, which reads the
	// session's aggregates while Aggregates may be building its own.
	aggMu  sync.Mutex
	replay *replaySource // with Options.Replay: what EachSample reads
	// addrLocs are the locations of the samples' addresses
	// (Sample.AddrLocation), by index in the session's addrRefs.
	addrLocs []Location

	firstMaps firstMaps // each DSO's first executable mapping
	segMu     sync.Mutex
	execSegs  map[*DSO]*dsoSegments // executable segments of found binaries, read by ExecSegment
	comms     []string
	opts      Options
}

// Aggregates returns the samples grouped by (stack, event, pid, tid, comm),
// the unit the top and pprof commands build on, ordered by stack ID, event,
// pid, tid and comm. The slice is shared by every caller: do not modify
// it. It is safe for concurrent use; the first call builds it (the check
// alone needs none).
func (r *Result) Aggregates() []Aggregate {
	r.aggOnce.Do(r.buildAggregates)
	return r.aggs
}

// buildAggregates turns the session's aggregates into r.aggs, sorted: by
// stack with a counting sort (stack IDs are dense), then each stack's few
// aggregates by event, pid, tid and comm. One sort of them all compared
// millions of pairs through their Stack pointers.
func (r *Result) buildAggregates() {
	if r.aggSrc == nil {
		return
	}
	start := make([]int, len(r.Stacks)+1) // where each stack's aggregates begin
	r.aggSrc.each(func(a *aggEntry) { start[a.key.stack+1]++ })
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	aggs := make([]Aggregate, r.aggSrc.n)
	next := slices.Clone(start[:len(r.Stacks)])
	r.aggSrc.each(func(a *aggEntry) {
		k := a.key
		ag := &aggs[next[k.stack]]
		next[k.stack]++
		ag.Stack, ag.Event, ag.PID, ag.TID = r.Stacks[k.stack], int(k.event), k.pid, k.tid
		ag.Comm, ag.Samples, ag.Period = r.comms[k.comm], a.samples, a.period
	})
	for i := range len(r.Stacks) {
		if run := aggs[start[i]:start[i+1]]; len(run) > 1 {
			slices.SortFunc(run, compareAggregates)
		}
	}
	r.aggMu.Lock()
	r.aggs, r.aggSrc = aggs, nil
	r.aggMu.Unlock()
}

// eachAggregate calls f with every aggregate's stack index (Stack.ID - 1),
// event, samples and period, in no order, and returns true; without
// building Aggregates when it is not built yet (the session's aggregates
// are not changed after finish). It returns false, calling f for none,
// when the Result has no aggregates from a session (one made by hand).
func (r *Result) eachAggregate(f func(stack, event int32, samples, period uint64)) bool {
	return r.eachAggregatePart(0, 1, f)
}

// eachAggregatePart is eachAggregate over part of parts of the
// aggregates, which parts calls, one per part, may walk concurrently.
func (r *Result) eachAggregatePart(part, parts int, f func(stack, event int32, samples, period uint64)) bool {
	r.aggMu.Lock()
	src, aggs := r.aggSrc, r.aggs
	r.aggMu.Unlock()
	if src == nil {
		if aggs == nil {
			return false
		}
		for i := range aggs {
			if ag := &aggs[i]; ag.Stack == nil || ag.Stack.set == nil {
				return false
			}
		}
		for i := part * len(aggs) / parts; i < (part+1)*len(aggs)/parts; i++ {
			ag := &aggs[i]
			f(int32(ag.Stack.ID-1), int32(ag.Event), ag.Samples, ag.Period)
		}
		return true
	}
	blocks := src.blocks
	for _, b := range blocks[part*len(blocks)/parts : (part+1)*len(blocks)/parts] {
		for i := range b {
			a := &b[i]
			f(a.key.stack, a.key.event, a.samples, a.period)
		}
	}
	return true
}

// compareAggregates orders two aggregates of one stack by event, pid, tid
// and comm; pids and tids as perf orders them, by the signed pid_t (the
// kernel's -1 first).
func compareAggregates(a, b Aggregate) int {
	return cmp.Or(cmp.Compare(a.Event, b.Event), cmp.Compare(int32(a.PID), int32(b.PID)),
		cmp.Compare(int32(a.TID), int32(b.TID)), strings.Compare(a.Comm, b.Comm))
}

// finish ends the session: it gives each DSO a samples touch its identity
// and verdict, symbolizes every distinct location of a DSO whose verdict
// allows it (each once, in parallel), and counts trusted samples.
func (s *session) finish(ctx context.Context) (*Result, error) {
	o := &s.opts
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	loc := s.opts.locator
	s.assignTableBuildIDs()
	stackSamples, touched := s.countHits()
	if err := s.judgeAll(ctx, touched, loc, workers); err != nil {
		return nil, err
	}
	// DSOs that only kept samples' addresses lie in are judged alike,
	// for script's sake, but are no DSO a sample touches.
	addrOnly := s.addrOnlyDSOs()
	if err := s.judgeAll(ctx, addrOnly, loc, workers); err != nil {
		return nil, err
	}

	// The symbol files are opened, and proven, before trust is counted:
	// one replaced since its verdict changes that verdict.
	var lookups map[*DSO]symbolLookup
	if !o.NoSymbols {
		var closeLookups func()
		lookups, closeLookups = s.openSymbols(ctx, slices.Concat(touched, addrOnly), workers)
		defer closeLookups()
	}

	res := &Result{DSOs: touched, Samples: s.samples, StackUserSamples: s.stackUserSamples, UnprovenUnwinds: s.unprovenUnwinds, RecordingEnd: s.rec.end, RecordingEndSource: s.rec.endSource, Arch: s.rec.machine.arch, ThisBoot: s.recordedThisBoot(), opts: *o, comms: s.comms}
	if s.bySignature() {
		// The stacks are signatures: the Result has none, and no
		// aggregates (Options.ReportOnly, Options.Replay).
		s.buildLocations(res)
		s.countSignatureTrust(res, stackSamples)
	} else {
		s.buildStacks(res, touched, stackSamples)
	}
	if lookups != nil {
		if err := s.symbolize(ctx, res, lookups, workers); err != nil {
			return nil, err
		}
	} else {
		s.perfMapNotes(res)
	}
	for _, d := range touched {
		d.Symbolized = d.symPath != "" && d.SymbolError == ""
	}
	res.addrLocs = s.addrLocations(lookups)
	if o.Replay {
		keepKernelNames(touched, lookups)
	}

	if o.ReportOnly {
		res.Locations = nil // one per DSO (session.locOf)
	}
	if s.bySignature() {
		return res, nil
	}
	// The aggregates are turned into Result.Aggregates by its first call.
	res.aggSrc = &s.aggs
	return res, nil
}

// countHits counts the samples of each stack, and each DSO's hits
// (HitsLeaf, HitsAny); touched are the DSOs that some sample touches.
func (s *session) countHits() (stackSamples []uint64, touched []*DSO) {
	nstacks := s.numStacks()
	stackSamples = make([]uint64, nstacks)
	s.raws.flush() // the counts still in the raw-stack cache (rawtable.go)
	s.raws.flushCounts(&s.sigSlot)
	s.aggs.each(func(a *aggEntry) { stackSamples[a.key.stack] += a.samples })
	seen := make([]int, len(s.dsos)) // stack id + 1 that last counted the DSO
	dsoOf := func(r int32) int32 { return s.locs[r].dso }
	if s.bySignature() {
		dsoOf = func(r int32) int32 { return r } // dsoSignature
	}
	for _, d := range s.dsos {
		// Counted afresh: a finish after one that failed (a cancelled
		// context) must not add the hits a second time.
		d.HitsLeaf, d.HitsAny = 0, 0
	}
	for id := range nstacks {
		refs := s.stack(id)
		n := stackSamples[id]
		if n == 0 || len(refs) == 0 {
			continue
		}
		s.dsos[dsoOf(refs[0])].HitsLeaf += n
		for _, r := range refs {
			d := dsoOf(r)
			if seen[d] != id+1 {
				seen[d] = id + 1
				s.dsos[d].HitsAny += n
			}
		}
	}
	for _, d := range s.dsos {
		if d.HitsAny > 0 {
			touched = append(touched, d)
		}
	}
	return stackSamples, touched
}

// judgeAll gives every touched DSO its verdict, in parallel (lookups read
// files and may ask debuginfod), notes where unwinding stopped, and sorts
// touched most hit first.
func (s *session) judgeAll(ctx context.Context, touched []*DSO, loc locator, workers int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, d := range touched {
		g.Go(func() error {
			s.judge(gctx, d, loc)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, d := range touched {
		if d.unwindStops > 0 {
			d.addNote(fmt.Sprintf("--call-graph dwarf: unwinding stopped here in %d samples, so their callers beyond it are not shown: %s",
				d.unwindStops, d.cfiWhy))
		}
	}
	sort.SliceStable(touched, func(i, j int) bool {
		if touched[i].HitsAny != touched[j].HitsAny {
			return touched[i].HitsAny > touched[j].HitsAny
		}
		return touched[i].Path < touched[j].Path
	})
	return nil
}

// buildLocations fills res.Locations from the session's locations, in one
// block, which it returns.
func (s *session) buildLocations(res *Result) []Location {
	res.Locations = make([]*Location, len(s.locs))
	locBlock := make([]Location, len(s.locs))
	for i, r := range s.locs {
		l := &locBlock[i]
		*l = Location{ID: i + 1, DSO: s.dsos[r.dso], Offset: r.off}
		res.Locations[i] = l
	}
	return locBlock
}

// countSignatureTrust counts trusted samples when the stacks are DSO
// signatures (dsoSignature: the leaf's DSO first); stackSamples are the
// samples of each.
func (s *session) countSignatureTrust(res *Result, stackSamples []uint64) {
	for id, n := range stackSamples {
		if n == 0 {
			continue
		}
		var t, strict sigTrust
		for i, d := range s.stack(id) {
			v := s.dsos[d].Verdict
			t.add(i == 0, v.Trusted())
			strict.add(i == 0, v.Trusted() && v != Unverified)
		}
		res.Strict.add(n, !strict.untrusted, !strict.untrustedLeaf)
		f := TrustFigures{}
		f.add(n, !t.untrusted, !t.untrustedLeaf)
		res.TrustedSamples += f.TrustedSamples
		res.UntrustedAnySamples += f.UntrustedAnySamples
		res.UntrustedLeafSamples += f.UntrustedLeafSamples
	}
}

// sigTrust is what a signature's DSOs say of its samples' trust.
type sigTrust struct{ untrusted, untrustedLeaf bool }

func (t *sigTrust) add(leaf, trusted bool) {
	if !trusted {
		t.untrusted = true
		t.untrustedLeaf = t.untrustedLeaf || leaf
	}
}

// buildStacks fills res.Locations and res.Stacks from the session's, and
// counts trusted samples; stackSamples are the samples of each stack.
func (s *session) buildStacks(res *Result, touched []*DSO, stackSamples []uint64) {
	locBlock := s.buildLocations(res)
	// The stacks keep their location indexes; the pointers are built by
	// the first Stack.Locations call (stackSet.expand). Trust is counted
	// from the indexes, and only when some DSO a sample touches is
	// untrusted: otherwise every stack with samples is trusted (its DSOs
	// are all touched), and the frames need not be read again.
	allTrusted, allStrict := true, true
	for _, d := range touched {
		allTrusted = allTrusted && d.Trusted()
		allStrict = allStrict && d.Trusted() && d.Verdict != Unverified
	}
	var locTrusted []bool // by location index, made on first need
	nstacks := len(stackSamples)
	res.Stacks = make([]*Stack, nstacks)
	set := &stackSet{refs: s.stacks[:nstacks], locs: locBlock, frames: s.frames}
	stackBlock := make([]Stack, nstacks)
	first := 0
	for id := range nstacks {
		refs := s.stack(id)
		// Field by field: a whole-struct store of a type with pointers
		// is a bulk-barrier copy (runtime.wbMove) while the collector
		// runs, which it often does here.
		st := &stackBlock[id]
		st.ID, st.Trusted, st.LeafTrusted = id+1, true, true
		st.first, st.n, st.set = first, int32(len(refs)), set
		first += len(refs)
		if !allTrusted || stackSamples[id] == 0 {
			if locTrusted == nil {
				locTrusted = make([]bool, len(locBlock))
				for i := range locBlock {
					locTrusted[i] = locBlock[i].Trusted()
				}
			}
			for i, r := range refs {
				if !locTrusted[r] {
					st.Trusted = false
					if i == 0 {
						st.LeafTrusted = false
					}
					break
				}
			}
		}
		res.Stacks[id] = st
		n := stackSamples[id]
		if n > 0 {
			strictTrusted, strictLeaf := st.Trusted, st.LeafTrusted
			if !allStrict {
				strictTrusted, strictLeaf = strictTrust(refs, locBlock, st)
			}
			res.Strict.add(n, strictTrusted, strictLeaf)
		}
		if st.Trusted {
			res.TrustedSamples += n
		} else {
			res.UntrustedAnySamples += n
			if !st.LeafTrusted {
				res.UntrustedLeafSamples += n
			}
		}
	}
}

// TrustFigures count samples by trust under one policy.
type TrustFigures struct {
	TrustedSamples       uint64 `json:"trusted_samples"`
	UntrustedLeafSamples uint64 `json:"untrusted_leaf_samples"`
	UntrustedAnySamples  uint64 `json:"untrusted_any_samples"`
}

func (f *TrustFigures) add(n uint64, trusted, leafTrusted bool) {
	switch {
	case trusted:
		f.TrustedSamples += n
	case leafTrusted:
		f.UntrustedAnySamples += n
	default:
		f.UntrustedAnySamples += n
		f.UntrustedLeafSamples += n
	}
}

// strictTrust is whether the stack of refs, whose trust under the default
// policy st holds, is trusted (and its leaf) when unverified DSOs are not.
func strictTrust(refs []int32, locs []Location, st *Stack) (trusted, leaf bool) {
	if !st.Trusted && !st.LeafTrusted {
		return false, false
	}
	trusted, leaf = true, true
	for i, r := range refs {
		if v := locs[r].DSO.Verdict; !v.Trusted() || v == Unverified {
			trusted = false
			if i == 0 {
				leaf = false
			}
			break
		}
	}
	return trusted, leaf
}

// addNote adds a note to d once.
func (d *DSO) addNote(n string) {
	if !slices.Contains(d.Notes, n) {
		d.Notes = append(d.Notes, n)
	}
}

// symbolWarner is implemented by a symbolLookup that can say what it had to
// skip in its file without failing (symbolize.Binary's Warnings: malformed
// DWARF or .gopclntab, a refused debug file, malformed perf map lines).
// finish turns each warning into a note of the DSO.
type symbolWarner interface {
	Warnings() []string
}

// Warnings implements symbolWarner.
func (l *symLookup) Warnings() []string { return l.bin.Warnings() }

// warningNotes adds lk's warnings to d's notes, each once.
func warningNotes(d *DSO, lk symbolLookup) {
	if sw, ok := lk.(symbolWarner); ok {
		for _, w := range sw.Warnings() {
			d.addNote("symbols: " + w)
		}
	}
}

// perfMapNotes gives the notes of the JIT DSOs' perf maps when nothing is
// symbolized (perfcheck check): reading a perf map is cheap, and the lines
// it skips are code left unnamed. Binaries are not opened for their
// warnings: loading every DWARF index would cost the check the time it
// saves by not symbolizing (their warnings come with top, script, pprof).
func (s *session) perfMapNotes(res *Result) {
	opener := s.opts.opener()
	for _, d := range res.DSOs {
		if d.Kind != dso.JIT || d.symPath == "" {
			continue
		}
		lk, err := opener.Open(d.symPath, d.Kind)
		if err != nil {
			d.addNote("symbols: " + err.Error())
			continue
		}
		warningNotes(d, lk)
		lk.Close()
	}
}

// moduleStart is where the recording mapped module d.
func (s *session) moduleStart(d *DSO) uint64 {
	start, _, _ := s.moduleRange(d)
	return start
}

// openSymbols opens the symbol source of every DSO of dsos whose verdict
// allows names, each once, in parallel, and proves each by its build-id
// (proveLookup): a file replaced after its verdict was given loses its
// names and the verdict changes (refuseLookup), so it runs before trust is
// counted. close releases the lookups and the temporary files.
func (s *session) openSymbols(ctx context.Context, dsos []*DSO, workers int) (lookups map[*DSO]symbolLookup, close func()) {
	opener := s.opts.opener()
	var cleanups []func()
	for _, d := range dsos {
		if d.needReloc && d.symPath != "" {
			s.relocateKernel(d)
		}
	}
	for _, d := range dsos {
		if d.Kind == dso.VDSO && (d.Verdict == Verified || d.Source == "running-vdso") && d.symPath == "" {
			// Verified against the running vdso, or taken for it
			// (judgeVDSOWithoutBuildID), which exists only in memory:
			// symbolize from a private temporary copy.
			if p, cleanup, err := runningVDSOFile(d.FoundBuildID); err == nil {
				cleanups = append(cleanups, cleanup)
				d.symPath = p
			}
		}
	}
	lookups = map[*DSO]symbolLookup{}
	var mu sync.Mutex
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, d := range dsos {
		if d.symPath == "" {
			continue
		}
		g.Go(func() error {
			var lk symbolLookup
			var err error
			switch d.modNames {
			case "kallsyms":
				lk, err = s.opts.host.runningModuleNames(moduleName(d.Path), s.moduleStart(d), d.modLimit)
			case "ko":
				if d.modLookup != nil {
					lk = d.modLookup
				} else {
					lk, err = readKO(d.symPath, d.modLimit)
				}
			default:
				lk, err = openDSO(opener, d, &s.opts)
			}
			if err == nil {
				if err = d.proveLookup(lk); err != nil {
					lk.Close()
					lk = nil
				}
			}
			if lk != nil && d.Kind == dso.Kernel && !d.needReloc {
				d.relocateTo(lk)
			}
			mu.Lock()
			defer mu.Unlock()
			if lk == nil {
				// One failing binary is reported and skipped.
				d.refuseLookup(err, s.opts.host)
				return nil
			}
			lookups[d] = lk
			return nil
		})
	}
	g.Wait()
	return lookups, func() {
		for _, lk := range lookups {
			lk.Close()
		}
		for _, c := range cleanups {
			c()
		}
	}
}

// symbolizeLocation names l with lk, its DSO's lookup.
func symbolizeLocation(l *Location, lk symbolLookup) {
	fr, err := lk.Lookup(l.Offset + l.DSO.symDelta)
	if err != nil {
		l.SymbolError = err.Error()
		return
	}
	l.Frames = fr
	if so, ok := lk.(symOffsetter); ok && len(fr) > 0 {
		l.SymOffset, l.HasSymOffset = so.symOffset(l.Offset + l.DSO.symDelta)
	}
}

// symbolize names every location whose DSO has a lookup (openSymbols):
// each distinct location looked up once, the lookups spread over the
// workers.
func (s *session) symbolize(ctx context.Context, res *Result, lookups map[*DSO]symbolLookup, workers int) error {
	var work []*Location
	for _, l := range res.Locations {
		if lookups[l.DSO] != nil {
			work = append(work, l)
		}
	}
	chunk := (len(work) + workers - 1) / max(workers, 1)
	if chunk == 0 {
		return nil
	}
	// What the symbolizers skipped (malformed DWARF, perf map lines, …),
	// asked once the lookups are done: the indexes are loaded by then.
	defer func() {
		for d, lk := range lookups {
			warningNotes(d, lk)
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	for i := 0; i < len(work); i += chunk {
		part := work[i:min(i+chunk, len(work))]
		g.Go(func() error {
			for j, l := range part {
				if j%256 == 0 && gctx.Err() != nil {
					return gctx.Err()
				}
				symbolizeLocation(l, lookups[l.DSO])
			}
			return nil
		})
	}
	return g.Wait()
}
