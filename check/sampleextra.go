package check

import (
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/symbolize"
)

// sampleExtra is what perf script -F prints of a sample beyond its stack
// (Sample.Addr, Weight, DataSrc, PhysAddr, RegsIntr, RegsUser,
// AddrLocation), carried from the reader to the kept samples when an event
// recorded some of it (session.keepExtra): few recordings do, and the
// feedOp has no room left in its cache line.
type sampleExtra struct {
	addr, weight, dataSrc, physAddr uint64
	// regsLo is where the registers are in the holder's words (the
	// batch's, then sampleIPs'): intrN interrupt registers, then userN
	// user registers.
	regsLo  int32
	addrLoc int32 // index in session.addrRefs of addr's location; -1: not named
	// rawLo, rawN are the tracepoint payload (PERF_SAMPLE_RAW of a
	// tracepoint event) in the holder's bytes.
	rawLo, rawN      int32
	intrN, userN     uint8
	intrABI, userABI uint8
}

// extraSampleTypes are the sample fields sampleExtra carries, the
// registers only when they are kept (Options.KeepRegisters).
const (
	extraSampleTypes = perfdata.SampleAddr | perfdata.SampleWeight | perfdata.SampleWeightStruct |
		perfdata.SampleDataSrc | perfdata.SamplePhysAddr
	registerSampleTypes = perfdata.SampleRegsIntr | perfdata.SampleRegsUser
)

// tracepointRaw reports whether event a's PERF_SAMPLE_RAW is a tracepoint's
// payload, which perf script prints (its trace field).
func tracepointRaw(a *perfdata.Attr) bool {
	return a.Type == perfdata.AttrTypeTracepoint && a.SampleType&perfdata.SampleRaw != 0
}

// rawBytes is how many of the batch's bytes r's extra fields take.
func (s *session) rawBytes(r *perfdata.Sample) int {
	if r.Fields&perfdata.SampleRaw == 0 || r.EventIndex < 0 || r.EventIndex >= len(s.tracepoints) || !s.tracepoints[r.EventIndex] {
		return 0
	}
	return len(r.Raw)
}

// recordsExtra reports whether an event of the recording records a field
// sampleExtra carries, registers counting when regs is set.
func recordsExtra(events []perfdata.Event, regs bool) bool {
	want := extraSampleTypes
	if regs {
		want |= registerSampleTypes
	}
	for i := range events {
		if events[i].Attr.SampleType&want != 0 || tracepointRaw(&events[i].Attr) {
			return true
		}
	}
	return false
}

// decideExtra sets what the kept samples keep beyond their stacks, from
// the recording's events (all known at its first sample, a stream's too).
func (s *session) decideExtra(events []perfdata.Event) {
	s.extraDecided = true
	s.keepExtra = recordsExtra(events, s.opts.KeepRegisters)
	for i := range events {
		s.addrNamed = append(s.addrNamed, addrNamed(&events[i].Attr))
		s.tracepoints = append(s.tracepoints, tracepointRaw(&events[i].Attr))
	}
}

// extraWords is how many of the batch's words r's extra fields take.
func (s *session) extraWords(r *perfdata.Sample) int {
	if !s.opts.KeepRegisters {
		return 0
	}
	return len(r.RegsIntr) + len(r.RegsUser)
}

// addExtra appends r's extra fields to b, its registers to b.words when
// regs is set, its first raw bytes of its payload to b.bytes.
func (b *feedBatch) addExtra(r *perfdata.Sample, regs bool, raw int) {
	x := sampleExtra{addr: r.Addr, weight: r.Weight, dataSrc: r.DataSrc, physAddr: r.PhysAddr,
		regsLo: int32(len(b.words)), addrLoc: -1, rawLo: int32(len(b.bytes)), rawN: int32(raw)}
	b.bytes = append(b.bytes, r.Raw[:raw]...)
	if regs {
		x.intrN, x.userN = uint8(min(len(r.RegsIntr), 64)), uint8(min(len(r.RegsUser), 64))
		x.intrABI, x.userABI = uint8(r.RegsIntrABI), uint8(r.RegsUserABI)
	}
	if r.Fields&perfdata.SampleWeightStruct != 0 {
		// perf script prints the struct's first word as the weight
		// (perf_sample's weight, evsel__parse_sample).
		x.weight = uint64(r.WeightVar1())
	}
	b.words = append(b.words, r.RegsIntr[:x.intrN]...)
	b.words = append(b.words, r.RegsUser[:x.userN]...)
	b.extras = append(b.extras, x)
}

// addrNamed reports whether perf script names an event's PERF_SAMPLE_ADDR
// with a symbol and DSO (sample_addr_correlates_sym in
// tools/perf/util/event.c): software page faults and branch tracing
// (branch instructions sampled at period 1), whose addresses are data or
// code of the process.
func addrNamed(a *perfdata.Attr) bool {
	const (
		typeHardware, typeSoftware               = 0, 1
		branchInstructions                       = 4
		pageFaults, pageFaultsMin, pageFaultsMaj = 2, 5, 6
	)
	if a.SampleType&perfdata.SampleAddr == 0 {
		return false
	}
	switch a.Type {
	case typeSoftware:
		return a.Config == pageFaults || a.Config == pageFaultsMin || a.Config == pageFaultsMaj
	case typeHardware:
		return a.Config == branchInstructions && a.SamplePeriod == 1
	}
	return false
}

// resolveAddr returns the index in s.addrRefs of where e's address lies in
// its process's address space now, as perf's thread__find_map_fb finds
// it: in the space of the sample's CPU mode, else in the one the address
// belongs to (the kernel's upper half, or the process's).
func (s *session) resolveAddr(e *sampleEvent, addr uint64) int32 {
	mode := e.Mode
	if s.tracker.Lookup(e.PID, mode, addr) == nil {
		switch {
		case mode == perfdata.CPUModeKernel && addr < 1<<63:
			mode = perfdata.CPUModeUser
		case mode == perfdata.CPUModeUser && addr >= 1<<63:
			mode = perfdata.CPUModeKernel
		}
	}
	r := s.resolve(e.PID, mode, addr)
	if i, ok := s.addrIdx[r]; ok {
		return i
	}
	if s.addrIdx == nil {
		s.addrIdx = map[frameRef]int32{}
	}
	i := int32(len(s.addrRefs))
	s.addrRefs = append(s.addrRefs, r)
	s.addrIdx[r] = i
	return i
}

// addrOnlyDSOs returns the DSOs kept samples' addresses lie in that no
// sample's stack touches.
func (s *session) addrOnlyDSOs() []*DSO {
	var out []*DSO
	seen := map[int32]bool{}
	for _, r := range s.addrRefs {
		if d := s.dsos[r.dso]; d.HitsAny == 0 && !seen[r.dso] {
			seen[r.dso] = true
			out = append(out, d)
		}
	}
	return out
}

// addrLocations returns the locations of s.addrRefs, named from lookups
// as perf names an address (dataSymboler), or, for a DSO whose lookup
// knows only code (a kernel module's), as a frame is.
func (s *session) addrLocations(lookups map[*DSO]symbolLookup) []Location {
	locs := make([]Location, len(s.addrRefs))
	for i, r := range s.addrRefs {
		l := &locs[i]
		*l = Location{DSO: s.dsos[r.dso], Offset: r.off}
		lk := lookups[l.DSO]
		if lk == nil {
			continue
		}
		off := r.off + l.DSO.symDelta
		if ds, ok := lk.(dataSymboler); ok {
			if name, symOff, ok := ds.dataSymbol(off); ok {
				l.Frames = []symbolize.Frame{{Function: symbolize.Demangle(name), RawName: name}}
				l.SymOffset, l.HasSymOffset = symOff, true
			}
			continue
		}
		if fr, err := lk.Lookup(off); err == nil && len(fr) > 0 {
			l.Frames = fr
			if so, ok := lk.(symOffsetter); ok {
				l.SymOffset, l.HasSymOffset = so.symOffset(off)
			}
		}
	}
	return locs
}
