package pprofout

import (
	"sort"
	"strings"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
)

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
func (t *tables) addMapping(res *check.Result, d *check.DSO, s *span) {
	m := mapping{file: d.Path}
	if len(d.BuildID) > 0 {
		m.buildID = d.BuildID.String()
	} else if d.Verdict == check.Unverified && len(d.FoundBuildID) > 0 {
		// No build-id recorded, but the file at the path shows no
		// sign of change and is what the names come from: its
		// build-id is the best identity known, and matches the names.
		m.buildID = d.FoundBuildID.String()
	}
	if addrKind(d) {
		layOutAddresses(&m, d, s)
	} else if mr, ok := res.FirstMapping(d); ok && realRange(mr, s.lo, s.hi) {
		t.bases[d] = layOutRecorded(&m, mr, s)
	} else {
		t.bases[d] = t.layOutSynthetic(res, &m, d, s)
	}
	if refused(d) {
		// The file at the recorded path is not the binary that ran
		// (or there is none): a symbolizer that opens m.file without
		// checking build-ids (go tool pprof's does not) would name
		// these frames from the wrong file. The verdict appended makes
		// the name one that opens nothing, while the build-id still
		// lets pprof find the right binary ($PPROF_BINARY_PATH/<build-id>/...).
		m.file = d.Path + " [" + d.Verdict.String() + "]"
	}
	t.mapOf[d] = len(t.mappings)
	t.mappings = append(t.mappings, m)
}

// layOutAddresses lays out the mapping of a DSO whose offsets are
// addresses: they are real, so they are kept, in a mapping that spans them.
func layOutAddresses(m *mapping, d *check.DSO, s *span) {
	m.start = s.lo &^ 0xfff
	m.limit = (s.hi | 0xfff) + 1
	if d.Kind == dso.Kernel {
		// perf's kernel map: an address is its own offset.
		m.offset = m.start
	}
	if m.limit == 0 { // the top page
		m.limit = ^uint64(0)
	}
}

// layOutRecorded lays out a file-backed mapping as the recording's own:
// the first executable mapping of this DSO (MMAP2 start, end, pgoff),
// widened by whole pages if a sampled offset lies outside it (another
// segment of the same file). Addresses are what that process ran at;
// Address - Start + Offset is still the file offset, which is all pprof's
// symbolizers need. It returns the address of offset 0.
func layOutRecorded(m *mapping, mr addrspace.Mapping, s *span) uint64 {
	base := mr.Start - mr.Pgoff // address of offset 0 (mod 2^64)
	m.start, m.limit, m.offset = mr.Start, mr.Limit, mr.Pgoff
	if lo := (base + s.lo) &^ 0xfff; lo < m.start {
		m.offset -= m.start - lo
		m.start = lo
	}
	if hi := ((base + s.hi) | 0xfff) + 1; hi > m.limit {
		m.limit = hi
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
func (t *tables) layOutSynthetic(res *check.Result, m *mapping, d *check.DSO, s *span) uint64 {
	pg := textPageOffset(res, d, s.lo)
	base := t.next
	m.start = base + pg
	m.offset = pg
	m.limit = base + ((s.hi | 0xfff) + 1)
	if m.limit <= m.start {
		m.limit = m.start + 0x1000
	}
	t.next = (m.limit + 1<<32) &^ (1<<32 - 1)
	return base
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
