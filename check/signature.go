package check

import (
	"slices"

	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
)

// With Options.ReportOnly a sample's stack is its DSO signature
// (dsoSignature): its leaf's DSO, then each DSO of its frames once, in
// order of DSO index. Taken as locsOf then dsoSignature do it, every frame
// costs a lookup in the location memo and the signature a sort of every
// frame; but a callchain's frames come in runs within one mapping (the
// binary, libc, the kernel), and a frame in the mapping of the frame before
// it adds nothing to the signature. So sigState walks the callchain once,
// looks a frame up only when it leaves the range over which the last
// lookup's answer holds (addrspace.Tracker.LookupSpan), and marks each DSO
// once per sample.
type sigState struct {
	mark  []uint32 // by DSO index: the sample (epoch) that last added it
	epoch uint32
	// hasLoc reports, by DSO index, that the DSO's one location is
	// interned (locOf does it per frame: the count of locations is
	// the same either way).
	hasLoc []bool
	// last and lastID are the last signature interned and its stack id:
	// a process's samples come in runs and mostly share one.
	last   []int32
	lastID int32
	// span is the range over which the last lookup's answer, DSO
	// spanDSO, holds for spanMode; the pid and the maps are those of the
	// sample being walked (reset per sample).
	spanLo, spanHi uint64
	spanMode       perfdata.CPUMode
	spanDSO        int32
	spanOK         bool
	// special holds specialDSO's answers (+1; 0: not asked yet) for
	// guest, kernel and unknown frames, which come in numbers where
	// callchains are walked through garbage frame pointers.
	special [3]int32
}

// signature appends to refs the DSO signature of e, whose user frames,
// unwound from its stack copy, are user: what dsoSignature makes of locsOf.
func (s *session) signature(e *sampleEvent, user []uint64, refs []int32) []int32 {
	g := &s.sig
	if g.epoch++; g.epoch == 0 {
		clear(g.mark)
		g.epoch = 1
	}
	g.spanOK = false
	leaf := s.spanDSO(e.PID, e.Mode, e.IP)
	s.sigLoc(leaf)
	refs = append(refs, leaf)
	start := len(refs)
	mode := e.Mode
	first := true
	for _, ip := range e.Callchain {
		if ip >= contextMax {
			mode = chainMode(ip, mode)
			continue
		}
		if first {
			first = false
			if ip == e.IP {
				continue
			}
		}
		refs = s.sigAdd(refs, e.PID, mode, ip)
	}
	for _, ip := range user {
		refs = s.sigAdd(refs, e.PID, perfdata.CPUModeUser, ip)
	}
	slices.Sort(refs[start:])
	return refs
}

// chainMode is the CPU mode a callchain context marker sets for the
// entries after it (mode, when the marker sets none); chainFrames follows
// the same rule.
func chainMode(marker uint64, mode perfdata.CPUMode) perfdata.CPUMode {
	switch marker {
	case contextKernel:
		return perfdata.CPUModeKernel
	case contextUser:
		return perfdata.CPUModeUser
	case contextHV:
		return perfdata.CPUModeHypervisor
	case contextGuestKernel:
		return perfdata.CPUModeGuestKernel
	case contextGuestUser, contextGuest:
		return perfdata.CPUModeGuestUser
	}
	return mode
}

// sigAdd appends the DSO of frame ip to refs unless the sample has it.
func (s *session) sigAdd(refs []int32, pid uint32, mode perfdata.CPUMode, ip uint64) []int32 {
	g := &s.sig
	d := g.spanDSO
	if !g.spanOK || mode != g.spanMode || ip-g.spanLo >= g.spanHi-g.spanLo {
		d = s.spanDSO(pid, mode, ip)
	}
	if g.mark[d] != g.epoch {
		g.mark[d] = g.epoch
		s.sigLoc(d)
		refs = append(refs, d)
	}
	return refs
}

// spanDSO returns the DSO of ip as resolve gives it, and keeps in s.sig
// the range of addresses that resolve to it alike.
func (s *session) spanDSO(pid uint32, mode perfdata.CPUMode, ip uint64) int32 {
	g := &s.sig
	var d int32
	g.spanOK = false
	switch mode {
	case perfdata.CPUModeGuestKernel, perfdata.CPUModeGuestUser:
		d = s.sigSpecial(0, "[guest]", dso.Guest)
	default:
		m, lo, hi := s.tracker.LookupSpan(pid, mode, ip)
		switch {
		case m != nil:
			d = s.mapDSO[m.ID]
			g.spanLo, g.spanHi, g.spanMode, g.spanDSO, g.spanOK = lo, hi, mode, d, true
		case mode == perfdata.CPUModeKernel || mode == perfdata.CPUModeHypervisor:
			d = s.sigSpecial(1, "[kernel.kallsyms]", dso.Kernel)
		default:
			d = s.sigSpecial(2, "[unknown]", dso.Unknown)
		}
	}
	if int(d) >= len(g.mark) {
		n := max(len(s.dsos), int(d)+1)
		g.mark = append(g.mark, make([]uint32, n-len(g.mark))...)
		g.hasLoc = append(g.hasLoc, make([]bool, n-len(g.hasLoc))...)
	}
	return d
}

// sigSpecial is specialDSO(name, k), kept in s.sig.special[i].
func (s *session) sigSpecial(i int, name string, k dso.Kind) int32 {
	if d := s.sig.special[i]; d > 0 {
		return d - 1
	}
	d := s.specialDSO(name, k)
	s.sig.special[i] = d + 1
	return d
}

// sigLoc interns DSO d's one location (ReportOnly's locOf drops offsets),
// the first time d is met.
func (s *session) sigLoc(d int32) {
	if !s.sig.hasLoc[d] {
		s.sig.hasLoc[d] = true
		s.loc(frameRef{dso: d})
	}
}

// internSignature is internStack for signatures, which repeat from one
// sample to the next.
func (s *session) internSignature(refs []int32) int32 {
	g := &s.sig
	if g.last != nil && slices.Equal(refs, g.last) {
		return g.lastID
	}
	g.lastID = s.internStack(refs)
	g.last = append(g.last[:0], refs...)
	return g.lastID
}
