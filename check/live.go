package check

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"slices"

	"github.com/perfcheck/perfcheck/perfdata"
)

// A stream read as it is written (perf record -o - | perfcheck script -)
// cannot wait for its end to print: with Options.OnSample, each sample is
// handed over as it is read, its frames named by the verdicts known then.
// A DSO is judged, and its symbols opened, when a sample first touches
// it, with what the recording has said so far (its features, the last
// sample's time as its end); a location is symbolized when first met.
// Analyze then judges every DSO again at the end, as for any recording,
// and Result.Changed lists the DSOs whose verdict differs from the one
// their samples were printed with: those samples' names must not be
// taken at face value. A pipe's verdicts rest on the MMAP2 records (their
// build-ids, or device and inode) and the files at their paths, which the
// records that come later do not change, so in practice the lists are
// empty; the check is what makes that a fact and not a hope.

// Only a pipe-format stream is read that way. A perf.data file read from
// standard input has its build-id table after its samples, and a regular
// file is complete already: those are checked first and their samples
// handed over from a second reading, as with Options.Replay.

// liveStream reports whether src is a stream whose samples OnSample takes
// as it is read: a pipe-format recording on something other than a
// regular file. It wraps the stream to look at its header.
func (src *Source) liveStream() bool {
	if src.stream == nil {
		return false
	}
	if f, ok := src.stream.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return false
		}
	}
	br := bufio.NewReaderSize(src.stream, 64<<10)
	src.stream = br
	h, err := br.Peek(16)
	if err != nil {
		return false
	}
	// A pipe's header is the magic and its own size, 16 bytes, in the
	// byte order of the recording.
	switch {
	case bytes.Equal(h[:8], []byte("PERFILE2")):
		return binary.LittleEndian.Uint64(h[8:]) == 16
	case bytes.Equal(h[:8], []byte("2ELIFREP")):
		return binary.BigEndian.Uint64(h[8:]) == 16
	}
	return false
}

// analyzeThenReplay is Analyze with OnSample for what is not read live:
// the check first, then every sample from a second reading.
func analyzeThenReplay(ctx context.Context, src Source, opts Options) (*Result, error) {
	fn := opts.OnSample
	opts.OnSample, opts.Replay = nil, true
	res, err := Analyze(ctx, src, opts)
	if res == nil {
		return nil, err
	}
	defer res.Close()
	if rerr := res.EachSample(ctx, fn); rerr != nil {
		return nil, rerr
	}
	res.replay = nil // closed
	return res, err
}

// VerdictChange is a DSO whose verdict at the end of the recording differs
// from the one its samples were handed to Options.OnSample with.
type VerdictChange struct {
	DSO     *DSO
	Printed Verdict // the verdict when its first sample was read
}

// live is the state of a reading with Options.OnSample.
type live struct {
	fn  func(*Sample) error
	rec recording
	// printed holds, for each DSO judged so far, the copy of it that was
	// judged then and that its samples' locations point to: the end's
	// judging then starts from the DSO as read, as for any recording.
	printed map[*DSO]*DSO
	lookups map[*DSO]symbolLookup
	closes  []func()
	locs    []*Location // by location id, made when first met
	// addrLocs are the locations of the samples' addresses
	// (Sample.AddrLocation), made when first met.
	addrLocs map[frameRef]*Location
	refs     []int32
	ips      []uint64
	brs      []BranchLocation
	ss       *sampleStack
	smp      Sample
}

// feedLive reads every record of f in time order, one at a time, feeding
// the session and handing each sample to opts.OnSample once counted.
func (s *session) feedLive(ctx context.Context, f recording) error {
	defer s.unwindContext(ctx)()
	lv := &live{fn: s.opts.OnSample, rec: f, printed: map[*DSO]*DSO{}, lookups: map[*DSO]symbolLookup{}, ss: newSampleStack()}
	s.live = lv
	defer func() {
		// Closed before the end's own judging, which opens what it
		// needs again; the verdicts stay for changes.
		for _, c := range lv.closes {
			c()
		}
	}()
	return s.readSerial(ctx, f, func(se *sampleEvent, r *perfdata.Sample) error {
		s.sample(se)
		if err := lv.hand(ctx, s, se, r); err != nil {
			return stopError{err}
		}
		return nil
	})
}

// hand gives fn the sample just counted, whose record is r.
func (lv *live) hand(ctx context.Context, s *session, e *sampleEvent, r *perfdata.Sample) error {
	pg, kg := s.tracker.Generation(e.PID)
	lv.refs = s.locsOf(e, s.user, pg, kg, lv.refs[:0])
	locs := lv.locs
	for _, id := range lv.refs {
		for int(id) >= len(locs) {
			locs = append(locs, nil)
		}
		if locs[id] == nil {
			locs[id] = lv.location(ctx, s, id)
		}
	}
	lv.locs = locs
	lv.ips = s.sampleAddrs(e, len(lv.refs), lv.ips[:0])
	lv.smp = Sample{Event: e.Event, PID: e.PID, TID: e.TID, CPU: e.CPU, Time: e.Time, Period: e.Period,
		Comm: s.tracker.ThreadComm(e.TID), Stack: lv.ss.of(lv.refs, locs), IPs: lv.ips, Addr: r.Addr, Record: r, Events: lv.rec.Events(), Features: lv.rec.Features()}
	lv.smp.AddrLocation = lv.addrLocation(ctx, s, e, r.Addr)
	lv.brs = lv.branchLocations(ctx, s, e, r, lv.brs[:0])
	lv.smp.Branches = lv.brs
	return lv.fn(&lv.smp)
}

// addrLocation returns the location of e's address, for an event whose
// addresses are named (addrNamed), judging its DSO first as location does
// a frame's; the address is also kept for the end's judging (resolveAddr).
func (lv *live) addrLocation(ctx context.Context, s *session, e *sampleEvent, addr uint64) *Location {
	if !s.addrDecided {
		s.decideAddr(lv.rec.Events())
	}
	if e.Event >= len(s.addrNamed) || !s.addrNamed[e.Event] {
		return nil
	}
	return lv.locateAddr(ctx, s, e, addr)
}

// locateAddr returns the location of addr, one of e's addresses, judging
// its DSO first as location does a frame's; the address is also kept for
// the end's judging (resolveAddr).
func (lv *live) locateAddr(ctx context.Context, s *session, e *sampleEvent, addr uint64) *Location {
	ref := s.addrRefs[s.resolveAddr(e, addr)]
	if l, ok := lv.addrLocs[ref]; ok {
		return l
	}
	orig := s.dsos[ref.dso]
	d, ok := lv.printed[orig]
	if !ok {
		d = lv.judge(ctx, s, orig)
	}
	l := &Location{DSO: d, Offset: ref.off}
	if lk := lv.lookups[d]; lk != nil {
		nameAddr(l, lk)
	}
	if lv.addrLocs == nil {
		lv.addrLocs = map[frameRef]*Location{}
	}
	lv.addrLocs[ref] = l
	return l
}

// location makes location id, judging its DSO first if no sample touched
// it before, and names it when its DSO's verdict allows.
func (lv *live) location(ctx context.Context, s *session, id int32) *Location {
	ref := s.locs[id]
	d, ok := lv.printed[s.dsos[ref.dso]]
	if !ok {
		d = lv.judge(ctx, s, s.dsos[ref.dso])
	}
	l := &Location{ID: int(id) + 1, DSO: d, Offset: ref.off}
	if lk := lv.lookups[d]; lk != nil {
		symbolizeLocation(l, lk)
	}
	return l
}

// judge gives a copy of d its verdict with what the recording has said so
// far, opens its symbols when the verdict allows, and returns the copy.
func (lv *live) judge(ctx context.Context, s *session, orig *DSO) *DSO {
	d := new(DSO)
	*d = *orig
	d.Notes = slices.Clone(orig.Notes)
	s.rec.machine.fromFeatures(lv.rec.Features())
	if s.rec.clock == nil {
		if cd, err := lv.rec.Features().ClockData(); err == nil && cd.WallClockNS != 0 {
			s.rec.clock = &cd
		}
	}
	if s.rec.endSource != EndFromMTime {
		s.rec.endFromClock(s.lastTime)
	}
	s.judge(ctx, d, s.opts.locator)
	if !s.opts.NoSymbols {
		lookups, closeFn := s.openSymbols(ctx, []*DSO{d}, 1)
		lv.closes = append(lv.closes, closeFn)
		if lk := lookups[d]; lk != nil {
			lv.lookups[d] = lk
		}
	}
	lv.printed[orig] = d
	return d
}

// changes lists the DSOs whose final verdict differs from the one their
// samples were handed over with.
func (lv *live) changes() []VerdictChange {
	var out []VerdictChange
	for d, p := range lv.printed {
		if d.Verdict != p.Verdict {
			out = append(out, VerdictChange{DSO: d, Printed: p.Verdict})
		}
	}
	return out
}
