package check

import (
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/symbolize"
)

// decideAddr sets whether the first reading locates the samples'
// addresses, from the recording's events (all known at its first sample,
// a stream's too): for the events whose addresses script names
// (addrNamed), their DSOs must be judged before the second reading.
func (s *session) decideAddr(events []perfdata.Event) {
	s.addrDecided = true
	for i := range events {
		named := addrNamed(&events[i].Attr)
		s.addrNamed = append(s.addrNamed, named)
		s.keepAddr = s.keepAddr || named
	}
}

// tracepointRaw reports whether event a's PERF_SAMPLE_RAW is a tracepoint's
// payload, which perf script prints (its trace field).
func tracepointRaw(a *perfdata.Attr) bool {
	return a.Type == perfdata.AttrTypeTracepoint && a.SampleType&perfdata.SampleRaw != 0
}

// addrNamed reports whether perf script names an event's PERF_SAMPLE_ADDR
// with a symbol and DSO (sample_addr_correlates_sym in
// tools/perf/util/event.c): software page faults and branch tracing
// (branch instructions sampled at period 1), whose addresses are data or
// code of the process.
func addrNamed(a *perfdata.Attr) bool {
	const (
		branchInstructions                       = 4
		pageFaults, pageFaultsMin, pageFaultsMaj = 2, 5, 6
	)
	if a.SampleType&perfdata.SampleAddr == 0 {
		return false
	}
	switch a.Type {
	case perfdata.AttrTypeSoftware:
		return a.Config == pageFaults || a.Config == pageFaultsMin || a.Config == pageFaultsMaj
	case perfdata.AttrTypeHardware:
		return a.Config == branchInstructions && a.SamplePeriod == 1
	}
	return false
}

// resolveAddr returns the index in s.addrRefs of where e's address lies,
// adding it when new (addrRef).
func (s *session) resolveAddr(e *sampleEvent, addr uint64) int32 {
	r := s.addrRef(e, addr)
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

// addrRef is where e's address lies in its process's address space now,
// as perf's thread__find_map_fb finds it: in the space of the sample's CPU
// mode, else in the one the address belongs to (the kernel's upper half,
// or the process's).
func (s *session) addrRef(e *sampleEvent, addr uint64) frameRef {
	mode := e.Mode
	if s.tracker.Lookup(e.PID, mode, addr) == nil {
		switch {
		case mode == perfdata.CPUModeKernel && addr < 1<<63:
			mode = perfdata.CPUModeUser
		case mode == perfdata.CPUModeUser && addr >= 1<<63:
			mode = perfdata.CPUModeKernel
		}
	}
	return s.resolve(e.PID, mode, addr)
}

// replayAddr returns the location of a replayed sample's address, found
// again among those the first reading located; nil for an event whose
// addresses are not named. ok is false when the first reading did not
// see it (the recording changed).
func (s *session) replayAddr(e *sampleEvent, addr uint64, res *Result) (_ *Location, ok bool) {
	if e.Event >= len(s.addrNamed) || !s.addrNamed[e.Event] {
		return nil, true
	}
	return s.foundAddr(e, addr, res)
}

// addrOnlyDSOs returns the DSOs the samples' located addresses lie in
// that no sample's stack touches.
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
		if lk := lookups[l.DSO]; lk != nil {
			nameAddr(l, lk)
		}
	}
	return locs
}

// nameAddr names l, the location of an address, with lk, its DSO's lookup.
func nameAddr(l *Location, lk symbolLookup) {
	off := l.Offset + l.DSO.symDelta
	if ds, ok := lk.(dataSymboler); ok {
		if name, symOff, ok := ds.dataSymbol(off); ok {
			l.Frames = []symbolize.Frame{{Function: symbolize.Demangle(name), RawName: name}}
			l.SymOffset, l.HasSymOffset = symOff, true
		}
		return
	}
	if fr, err := lk.Lookup(off); err == nil && len(fr) > 0 {
		l.Frames = fr
		if so, ok := lk.(symOffsetter); ok {
			l.SymOffset, l.HasSymOffset = so.symOffset(off)
		}
	}
}
