package symbolize

import (
	"debug/dwarf"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// sectionDrop gives back the memory of decompressed .debug_info and
// .debug_line bytes as units are decoded. A unit's decode reads its own
// DIEs and line program once and keeps what lookups need in its tables;
// the raw bytes are needed again only to decode it again (after the budget
// evicted it) or to read a DIE that another unit refers to (the abstract
// origin of an inlined call, the declaration a definition specifies). So
// once a unit is decoded, the whole pages of its DIEs and of its line
// program go back to the kernel (region.dropPages), and the names of the
// DIEs in it that other units can refer to (DW_AT_inline abstract
// instances, DW_AT_declaration subprograms: DWARF 5 sections 3.3.8.1 and
// 2.13.2) are kept in refNames. A read that still lands in a dropped unit
// (a reference refNames does not cover, or a re-decode after eviction)
// makes the bytes readable again first. zlib sections, decompressed by our
// inflater with checkpoints, fill just the unit's bytes again and give
// back even the units not yet decoded, right after the index's load (see
// partial). zstd sections are decompressed again whole (refill), and the
// decoded units' pages are dropped again after it; after maxRefills
// refills they stay whole, so that a binary whose references defeat
// refNames costs its sections' memory, as before, rather than a
// decompression per lookup.
//
// .debug_rnglists (DWARF 5) is dropped the same way, by the range lists
// each decoded unit read: in the Go compiler it is 1.7 MB, one list table
// for all units, laid out unit after unit. The lists of a unit are not
// known before it is decoded, so rather than by unit extents they are
// tracked by read: every read of the section while decoding goes through
// rngTouch, which records the extent of what the unit read (list offsets
// table entries and whole lists, their ends found by rnglistEnd) and
// decompresses the section again first when a read lands in a range
// already given back (lists of two units interleaved, or a unit decoded
// again after eviction). Gone ranges are merged with neighbours they
// touch, so that a page two units' lists share goes too once both are
// decoded.
//
// Only anonymous memory a compressed section was decompressed into is
// dropped: an uncompressed section is a mapping of the file, whose pages
// are the page cache's, shared and reclaimable already.
//
// All fields are used under dwarfIndex.mu.
type sectionDrop struct {
	info, line *region // nil: that section's pages are not dropped
	rng        *region // .debug_rnglists, likewise

	rngRead [2]int     // extent of the range lists the unit being decoded read ([0] < 0: none)
	unitRng [][2]int   // per unit: the extent its decode read, to drop once decoded
	rngGone []dropSpan // dropped extents of .debug_rnglists, sorted, disjoint and not touching

	infoSpans []dropSpan // every unit of .debug_info, by offset
	lineSpans []dropSpan // every line program units use, by offset
	unitInfo  []int32    // per unit (dwarfIndex.units): its infoSpans index, -1 none
	unitLine  []int32    // per unit: its lineSpans index, -1 none
	lineUsers []int32    // per line span: units using it whose pages are not dropped
	unitGone  []bool     // per unit: its pages are dropped

	refNames map[dwarf.Offset]dieName

	refills  int   // times bytes of decoded units were decompressed again
	dropped  int64 // bytes of units and line programs given back (again after a refill)
	redrop   bool  // a refill happened: drop the decoded units' pages again
	disabled bool  // too many refills: the sections stay whole

	// partial: every dropped section refills ranges (zlib with
	// checkpoints, region.ix). Then .debug_info and .debug_line
	// are dropped whole right after the index's load, each unit's DIEs
	// and line program are filled again just before its decode, and
	// whatever was filled for a decode (its own spans, the spans of
	// units it refers into, range lists) is dropped after it; there is
	// no limit on refills. Otherwise (zstd) a refill decompresses the
	// sections whole, as described above.
	partial bool
	fills   int     // partial fills made
	spanOf  []int32 // per info span: its unit, -1 none
	filled  struct {
		info, line []int32  // spans filled for the decode in progress
		rng        [][2]int // range list extents likewise
	}
}

type dropSpan struct {
	lo, hi int
	gone   bool
}

// maxRefills is how many times the sections are decompressed again before
// dropping stops.
const maxRefills = 2

// initDrop sets up x.drop for the sections info and line (the bytes
// loadDWARFSections gave debug/dwarf), when at least one of them is
// decompressed anonymous memory. Called before the index is published.
func (x *dwarfIndex) initDrop(info, line, rnglists []byte) {
	// .debug_line may have been given back as soon as it was
	// decompressed (region.dropEarly): unless decodes fill what they
	// read of it (partial dropping, set up below), it must be whole.
	// A refill failing here (the file changed since its full pass)
	// turns DWARF off rather than let decodes read zeros.
	defer func() {
		r := x.secs.find(line)
		if r == nil || r.early == nil {
			return
		}
		if sd := x.drop; sd != nil && sd.partial && sd.line == r {
			return
		}
		if r.wholeAgain() != nil {
			x.hasData = false
		}
	}()
	if len(x.units) == 0 {
		return
	}
	sd := &sectionDrop{refNames: map[dwarf.Offset]dieName{}}
	bo := x.ef.ByteOrder
	if r := x.secs.find(info); r != nil && r.refill != nil {
		sd.info = r
		sd.infoSpans = unitSpans(info, bo)
	}
	if r := x.secs.find(line); r != nil && r.refill != nil {
		sd.line = r
	}
	if r := x.secs.find(rnglists); r != nil && r.refill != nil && x.dies != nil {
		// Only units decoded through the DIE reader track their
		// reads (rngTouch); the debug/dwarf path serves
		// relocatable files, whose sections are not regions.
		sd.rng = r
	}
	if sd.info == nil && sd.line == nil && sd.rng == nil {
		return
	}
	sd.unitRng = make([][2]int, len(x.units))
	for u := range sd.unitRng {
		sd.unitRng[u] = [2]int{-1, -1}
	}
	sd.rngRead = [2]int{-1, -1}
	sd.unitInfo = make([]int32, len(x.units))
	sd.unitLine = make([]int32, len(x.units))
	sd.unitGone = make([]bool, len(x.units))
	for u := range x.units {
		sd.unitInfo[u], sd.unitLine[u] = int32(sd.infoSpanOf(x.units[u].entry.Offset)), -1
	}
	if sd.line != nil {
		// The distinct line programs, by offset in .debug_line (dropping
		// finds a program's neighbours by offset).
		type program struct {
			stmtList int64
			span     dropSpan
		}
		var progs []program
		seen := map[int64]bool{}
		for u := range x.units {
			sl, ok := x.units[u].entry.Val(dwarf.AttrStmtList).(int64)
			if !ok || seen[sl] {
				continue
			}
			seen[sl] = true
			if lo, hi, ok := sd.lineExtent(line, sl, bo); ok {
				progs = append(progs, program{sl, dropSpan{lo: lo, hi: hi}})
			}
		}
		slices.SortFunc(progs, func(a, b program) int { return a.span.lo - b.span.lo })
		lineIdx := make(map[int64]int32, len(progs))
		for k, p := range progs {
			sd.lineSpans = append(sd.lineSpans, p.span)
			lineIdx[p.stmtList] = int32(k)
		}
		sd.lineUsers = make([]int32, len(progs))
		for u := range x.units {
			sl, ok := x.units[u].entry.Val(dwarf.AttrStmtList).(int64)
			if k, found := lineIdx[sl]; ok && found {
				sd.unitLine[u] = k
				sd.lineUsers[k]++
			}
		}
	}
	for i := 1; i < len(sd.lineSpans); i++ {
		if sd.lineSpans[i].lo < sd.lineSpans[i-1].hi {
			sd.line = nil // overlapping programs: do not guess, keep .debug_line whole
			break
		}
	}
	sd.partial = true
	for _, r := range []*region{sd.info, sd.line, sd.rng} {
		if r != nil && r.ix == nil {
			sd.partial = false
		}
	}
	x.drop = sd
	if !sd.partial {
		return
	}
	// The unit table is built: no unit's DIEs or line program are read
	// again before it is decoded (needUnit fills them then) or referred
	// to (refName). Range lists are dropped by read, as units are
	// decoded: which lists are a unit's is known only once it is.
	if sd.info != nil {
		x.keepAllRefNames()
	}
	sd.spanOf = make([]int32, len(sd.infoSpans))
	for i := range sd.spanOf {
		sd.spanOf[i] = -1
	}
	for u, i := range sd.unitInfo {
		if i >= 0 {
			sd.spanOf[i] = int32(u)
		}
	}
	// Fills start at units and line programs: put the checkpoints
	// there (the sections are still whole).
	if sd.info != nil {
		sd.info.ix.retarget(sd.info.data, spanStarts(sd.infoSpans))
	}
	if sd.line != nil {
		sd.line.ix.retarget(sd.line.data, spanStarts(sd.lineSpans))
	}
	if sd.info != nil {
		for i := range sd.infoSpans {
			sd.dropSpan(sd.info, sd.infoSpans, i)
		}
	}
	if sd.line != nil {
		for k := range sd.lineSpans {
			sd.dropSpan(sd.line, sd.lineSpans, k)
		}
	}
}

// keepAllRefNames reads into refNames, before .debug_info is dropped at
// load, the names of the DIEs of every unit that other units can refer
// to (those keepRefName keeps, found by the walk decodeUnit makes).
// Otherwise each reference into a unit not yet decoded would fill that
// unit's bytes again: 202 fills of 10.5 MB of units (and 33 MB decoded
// from their checkpoints before them) in the Go compiler batch, against
// one walk of the section here while it is whole.
func (x *dwarfIndex) keepAllRefNames() {
	if x.dies == nil {
		return
	}
	touch := x.dies.touchRng
	x.dies.touchRng = nil // not a decode: no range list read is the unit's
	defer func() { x.dies.touchRng = touch }()
	// The walk of every DIE is a quarter of the time to the first
	// answer for the Go compiler, with a core idle: two walks share it,
	// over the first and the second half of the section, and only find
	// the DIEs to keep. keepRefName then reads each again (a few
	// thousand, against the section's hundreds of thousands), in
	// section order, as one walk would have: it writes the name maps and
	// the arena. The unit readers are made first, so that the walks
	// share nothing they write (unitReader caches abbreviation tables).
	readers := make([]dieReader, len(x.units))
	ok := make([]bool, len(x.units))
	total := 0
	for u := range x.units {
		ok[u] = x.dies.unitReader(x.units[u].entry, &readers[u]) == nil // else the unit's decode reports it
		if ok[u] {
			total += readers[u].c.end - readers[u].c.pos
		}
	}
	mid, done := len(x.units), 0
	for u := range x.units {
		if ok[u] {
			if done += readers[u].c.end - readers[u].c.pos; done >= total/2 {
				mid = u + 1
				break
			}
		}
	}
	type ref struct {
		unit int
		pos  int
	}
	walk := func(lo, hi int) []ref {
		var refs []ref
		var e die
		for u := lo; u < hi; u++ {
			if !ok[u] {
				continue
			}
			r := readers[u] // a copy: the original reads these DIEs again below
			for {
				pos := r.c.pos
				ok, err := r.next(&e)
				if err != nil || !ok {
					break
				}
				switch {
				case e.tag == dwarf.TagSubprogram:
					if e.has&(hasInline|hasDecl) != 0 {
						refs = append(refs, ref{u, pos})
					}
				case skipsChildren(e.tag):
					// An error here is the next step's too.
					r.skipChildren(&e)
				}
			}
		}
		return refs
	}
	var second []ref
	var wg sync.WaitGroup
	wg.Go(func() { second = walk(mid, len(x.units)) })
	first := walk(0, mid)
	wg.Wait()
	var e die
	for _, refs := range [2][]ref{first, second} {
		for _, rf := range refs {
			r := &readers[rf.unit]
			r.c.pos = rf.pos
			if ok, err := r.next(&e); ok && err == nil {
				x.keepRefName(&e)
			}
		}
	}
}

// lineExtent is unitExtent for a line program, from the programs found
// when .debug_line was given back early (region.dropEarly), if it was. A
// program that is not one of them (a unit's DW_AT_stmt_list pointing
// elsewhere than where one starts) makes the section whole again, read
// as it is.
func (sd *sectionDrop) lineExtent(line []byte, off int64, bo binary.ByteOrder) (lo, hi int, ok bool) {
	if r := sd.line; r.early != nil {
		i := sort.Search(len(r.early), func(i int) bool { return int64(r.early[i].lo) >= off })
		if i < len(r.early) && int64(r.early[i].lo) == off {
			return r.early[i].lo, r.early[i].hi, true
		}
		if r.wholeAgain() != nil {
			return 0, 0, false
		}
	}
	return unitExtent(line, off, bo)
}

// spanStarts returns where each of spans starts: the offsets where fills
// of them begin, for inflateIndex.retarget.
func spanStarts(spans []dropSpan) []int {
	t := make([]int, len(spans))
	for i, sp := range spans {
		t[i] = sp.lo
	}
	return t
}

// unitExtent returns the extent of the unit (a .debug_info unit or a line
// program: both begin with the DWARF initial length) at off in sec.
func unitExtent(sec []byte, off int64, bo binary.ByteOrder) (lo, hi int, ok bool) {
	if off < 0 || off > int64(len(sec))-4 {
		return 0, 0, false
	}
	n, hdr := uint64(bo.Uint32(sec[off:])), int64(4)
	if n == 0xffffffff {
		if off > int64(len(sec))-12 {
			return 0, 0, false
		}
		n, hdr = bo.Uint64(sec[off+4:]), 12
	} else if n >= 0xfffffff0 {
		return 0, 0, false // reserved lengths
	}
	if n > uint64(int64(len(sec))-off-hdr) {
		return 0, 0, false
	}
	return int(off), int(off + hdr + int64(n)), true
}

// unitSpans lists the units of .debug_info in order, stopping at the first
// that does not parse (its bytes and the rest are never dropped).
func unitSpans(info []byte, bo binary.ByteOrder) []dropSpan {
	var out []dropSpan
	off := int64(0)
	for off < int64(len(info)) {
		lo, hi, ok := unitExtent(info, off, bo)
		if !ok || hi == lo {
			break
		}
		out = append(out, dropSpan{lo: lo, hi: hi})
		off = int64(hi)
	}
	return out
}

// dropUnitLines gives back the unit's line program, filled for its
// decode, as soon as decodeUnit has read it (before the DIE walk): for
// the Go compiler's largest unit it is about 1 MB more resident while its
// 2.4 MB of DIEs are walked and its tables built, the batch's peak. Only
// where spans are filled per decode (partial): otherwise units share the
// section's spans by count, which dropUnit keeps. Called with x.mu held.
func (x *dwarfIndex) dropUnitLines(u int32) {
	sd := x.drop
	if sd == nil || sd.disabled || !sd.partial {
		return
	}
	if k := sd.unitLine[u]; k >= 0 && sd.line != nil && !sd.lineSpans[k].gone {
		sd.dropSpan(sd.line, sd.lineSpans, int(k))
	}
}

// dropUnit gives back the pages of unit u's DIEs and, once every unit
// using it is decoded, of its line program. Called with x.mu held, after
// u was decoded.
func (x *dwarfIndex) dropUnit(u int32) {
	sd := x.drop
	if sd == nil || sd.disabled || !sd.partial && sd.unitGone[u] {
		return
	}
	// Partial: the unit's spans were filled for its decode; its range
	// lists were read by it, present or filled.
	sd.unitGone[u] = true
	if i := sd.unitInfo[u]; i >= 0 && sd.info != nil && !sd.infoSpans[i].gone {
		sd.dropSpan(sd.info, sd.infoSpans, int(i))
	}
	if sd.partial {
		x.dropUnitLines(u)
	} else if k := sd.unitLine[u]; k >= 0 && sd.line != nil {
		sd.lineUsers[k]--
		if sd.lineUsers[k] == 0 {
			sd.dropSpan(sd.line, sd.lineSpans, int(k))
		}
	}
	if e := sd.unitRng[u]; sd.rng != nil && e[0] >= 0 && e[0] < e[1] {
		sd.dropRng(e[0], e[1])
	}
}

// dropRng adds [lo, hi) of .debug_rnglists to the gone extents, merging
// it with those it overlaps or touches, and drops the pages of the merged
// extent.
func (sd *sectionDrop) dropRng(lo, hi int) {
	i := sort.Search(len(sd.rngGone), func(i int) bool { return sd.rngGone[i].hi >= lo })
	if i < len(sd.rngGone) && sd.rngGone[i].lo <= lo && hi <= sd.rngGone[i].hi {
		return // gone already
	}
	j := i
	for j < len(sd.rngGone) && sd.rngGone[j].lo <= hi {
		lo, hi = min(lo, sd.rngGone[j].lo), max(hi, sd.rngGone[j].hi)
		j++
	}
	sd.rngGone = slices.Replace(sd.rngGone, i, j, dropSpan{lo: lo, hi: hi, gone: true})
	sd.dropped += int64(sd.rng.giveBack(lo, hi))
}

// rngTouch is called before the decoder reads .debug_rnglists[lo:hi]: it
// makes the bytes readable again if any of them was given back, and adds
// them to what the unit being decoded read. Called with x.mu held.
func (x *dwarfIndex) rngTouch(lo, hi int) {
	sd := x.drop
	if sd == nil || sd.rng == nil || sd.disabled || lo >= hi {
		return
	}
	i := sort.Search(len(sd.rngGone), func(i int) bool { return sd.rngGone[i].hi > lo })
	if i < len(sd.rngGone) && sd.rngGone[i].lo < hi {
		if sd.partial {
			sd.fillRng(lo, hi)
		} else {
			x.refill()
			if sd.disabled {
				return
			}
		}
	}
	if sd.rngRead[0] < 0 {
		sd.rngRead = [2]int{lo, hi}
		return
	}
	sd.rngRead = [2]int{min(sd.rngRead[0], lo), max(sd.rngRead[1], hi)}
}

// rngDecoded records the range lists unit u's decode read, for dropUnit,
// and starts a new record. Called with x.mu held.
func (x *dwarfIndex) rngDecoded(u int32, ok bool) {
	sd := x.drop
	if sd == nil || sd.rng == nil {
		return
	}
	if ok && sd.rngRead[0] >= 0 {
		e := &sd.unitRng[u]
		if e[0] < 0 {
			*e = sd.rngRead
		} else {
			*e = [2]int{min(e[0], sd.rngRead[0]), max(e[1], sd.rngRead[1])}
		}
	}
	sd.rngRead = [2]int{-1, -1}
}

// rnglistEnd returns the offset just past the DWARF 5 range list at off
// of sec (section 7.25: each entry a DW_RLE_* code and its operands, the
// list ended by DW_RLE_end_of_list), reading it as debug/dwarf's
// dwarf5Ranges does: an unknown code is stepped over, and a list that runs
// off the section ends there. addrSize is the unit's address size.
func rnglistEnd(sec []byte, off, addrSize int) int {
	c := cursor{b: sec, pos: off, end: len(sec), order: binary.LittleEndian}
	if off < 0 || off > len(sec) {
		return off
	}
	for c.pos < c.end {
		switch c.u8() {
		case 0: // DW_RLE_end_of_list
			return c.pos
		case 1: // DW_RLE_base_addressx
			c.uleb()
		case 2, 3, 4: // startx_endx, startx_length, offset_pair
			c.uleb()
			c.uleb()
		case 5: // DW_RLE_base_address
			c.take(uint64(addrSize))
		case 6: // DW_RLE_start_end
			c.take(uint64(2 * addrSize))
		case 7: // DW_RLE_start_length
			c.take(uint64(addrSize))
			c.uleb()
		}
		if c.err != nil {
			break
		}
	}
	return len(sec)
}

// dropSpan marks spans[i] of r gone and drops its pages, together with
// the page it shares with a neighbour already gone, and counts its bytes
// in dropped.
func (sd *sectionDrop) dropSpan(r *region, spans []dropSpan, i int) {
	spans[i].gone = true
	lo, hi := spans[i].lo, spans[i].hi
	sd.dropped += int64(hi - lo)
	if i > 0 && spans[i-1].gone && spans[i-1].hi == lo {
		lo = spans[i-1].lo
	}
	if i+1 < len(spans) && spans[i+1].gone && spans[i+1].lo == hi {
		hi = spans[i+1].hi
	}
	r.giveBack(lo, hi)
}

// needUnit makes unit u's DIEs and line program readable before it is
// decoded (again). Called with x.mu held.
func (x *dwarfIndex) needUnit(u int32) {
	sd := x.drop
	if sd == nil {
		return
	}
	if sd.partial {
		if sd.unitGone[u] {
			sd.refills++ // decoded again after an eviction
		}
		if i := sd.unitInfo[u]; i >= 0 && sd.info != nil && sd.infoSpans[i].gone {
			sd.fillSpan(sd.info, sd.infoSpans, int(i))
			sd.filled.info = append(sd.filled.info, i)
		}
		if k := sd.unitLine[u]; k >= 0 && sd.line != nil && sd.lineSpans[k].gone {
			sd.fillSpan(sd.line, sd.lineSpans, int(k))
			sd.filled.line = append(sd.filled.line, k)
		}
		return
	}
	gone := false
	if i := sd.unitInfo[u]; i >= 0 && sd.info != nil && sd.infoSpans[i].gone {
		gone = true
	}
	if k := sd.unitLine[u]; k >= 0 && sd.line != nil && sd.lineSpans[k].gone {
		gone = true
	}
	if gone {
		x.refill()
	}
}

// refName answers nameAt for a DIE in a dropped unit from refNames; ok is
// false when off is not in a dropped unit. A DIE refNames does not hold
// makes the sections readable again. Called with x.mu held.
func (x *dwarfIndex) refName(off dwarf.Offset) (dieName, bool) {
	sd := x.drop
	if sd == nil || sd.info == nil {
		return dieName{}, false
	}
	i := sd.infoSpanOf(off)
	if i < 0 || !sd.infoSpans[i].gone {
		return dieName{}, false
	}
	if dn, ok := sd.refNames[off]; ok {
		return dn, true
	}
	if sd.partial {
		// A DIE of a unit not decoded yet (so not in refNames), or
		// one refNames does not keep: fill its unit, until the
		// decode in progress ends.
		if u := sd.spanOf[i]; u >= 0 && sd.unitGone[u] {
			sd.refills++
		}
		sd.fillSpan(sd.info, sd.infoSpans, i)
		sd.filled.info = append(sd.filled.info, int32(i))
		return dieName{}, false
	}
	x.refill()
	return dieName{}, false
}

// infoSpanOf returns the index of the unit span holding off, -1 for none.
func (sd *sectionDrop) infoSpanOf(off dwarf.Offset) int {
	i := sort.Search(len(sd.infoSpans), func(i int) bool { return sd.infoSpans[i].hi > int(off) })
	if i == len(sd.infoSpans) || sd.infoSpans[i].lo > int(off) {
		return -1
	}
	return i
}

// keepRefName records the name of a DIE other units may refer to, before
// its unit's pages are dropped.
func (x *dwarfIndex) keepRefName(e *die) {
	sd := x.drop
	if sd == nil || sd.disabled || sd.info == nil {
		return
	}
	if _, ok := sd.refNames[e.off]; ok {
		return
	}
	if e.has&(hasInline|hasDecl) == 0 {
		return
	}
	// A unit decoded earlier may have read this DIE's name already
	// (an inlined call of it): move that entry over rather than keep
	// two copies of the name for the rest of the batch (nameAt looks in
	// refNames before reading a DIE).
	if dn, ok := x.names[e.off]; ok {
		sd.refNames[e.off] = dn
		delete(x.names, e.off)
		x.namesBytes -= nameEntryBytes + int64(len(dn.name))
		return
	}
	name, linkage, view := x.nameOf(e, 0)
	if view {
		name = x.keep.strs.clone(name)
	}
	sd.refNames[e.off] = dieName{name, linkage}
}

// refill decompresses the dropped sections again and marks every unit's
// pages present; the decoded units' pages are dropped again after the
// decode in progress (redrop). After maxRefills, dropping stops. A refill
// that fails leaves the section unreadable: it panics, which the decoder's
// safely turns into an error for the lookup.
func (x *dwarfIndex) refill() {
	sd := x.drop
	for _, r := range []*region{sd.info, sd.line, sd.rng} {
		if r == nil {
			continue
		}
		if err := r.refill(0, len(r.data)); err != nil {
			panic(fmt.Errorf("decompressing again a section whose pages were dropped: %w", err))
		}
	}
	sd.refills++
	for i := range sd.infoSpans {
		sd.infoSpans[i].gone = false
	}
	for i := range sd.lineSpans {
		sd.lineSpans[i].gone = false
	}
	sd.rngGone = nil
	for u := range sd.unitGone {
		if sd.unitGone[u] {
			sd.unitGone[u] = false
			if k := sd.unitLine[u]; k >= 0 {
				sd.lineUsers[k]++
			}
		}
	}
	if sd.refills >= maxRefills {
		sd.disabled = true
		sd.refNames = nil
		return
	}
	sd.redrop = true
}

// redropDecoded drops again the pages of every decoded unit after a
// refill. Called with x.mu held.
func (x *dwarfIndex) redropDecoded() {
	sd := x.drop
	if sd == nil {
		return
	}
	if sd.partial {
		for _, i := range sd.filled.info {
			if !sd.infoSpans[i].gone {
				sd.dropSpan(sd.info, sd.infoSpans, int(i))
			}
		}
		for _, k := range sd.filled.line {
			if !sd.lineSpans[k].gone {
				sd.dropSpan(sd.line, sd.lineSpans, int(k))
			}
		}
		for _, e := range sd.filled.rng {
			sd.dropRng(e[0], e[1])
		}
		sd.filled.info, sd.filled.line, sd.filled.rng = sd.filled.info[:0], sd.filled.line[:0], sd.filled.rng[:0]
		return
	}
	if !sd.redrop {
		return
	}
	sd.redrop = false
	for u := range x.units {
		if x.units[u].info.Load() != nil {
			x.dropUnit(int32(u))
		}
	}
}

// fillSpan decompresses spans[i] of r again (a partial region) and marks
// it present. A fill that fails leaves the span unreadable: it panics, as
// refill does.
func (sd *sectionDrop) fillSpan(r *region, spans []dropSpan, i int) {
	if err := r.refill(spans[i].lo, spans[i].hi); err != nil {
		panic(fmt.Errorf("decompressing again a unit whose pages were dropped: %w", err))
	}
	sd.fills++
	spans[i].gone = false
}

// fillRng makes .debug_rnglists[lo:hi] readable again (a partial
// region): it fills the dropped bytes from the checkpoint before lo to
// the next one after hi (the fill decodes from that checkpoint anyway,
// and the decode's next reads are likely near), clipped to the dropped
// extents, which it removes from rngGone. What it filled is dropped again
// after the decode (redropDecoded).
func (sd *sectionDrop) fillRng(lo, hi int) {
	r := sd.rng
	a, b := r.ix.around(lo, hi)
	i := sort.Search(len(sd.rngGone), func(i int) bool { return sd.rngGone[i].hi > a })
	j := i
	for j < len(sd.rngGone) && sd.rngGone[j].lo < b {
		j++
	}
	sd.refills++
	if i == j {
		return
	}
	// One decode for every dropped extent in [a, b): they resume from
	// the same checkpoint, and the bytes between them are written
	// again with what they hold.
	fa, fb := max(sd.rngGone[i].lo, a), min(sd.rngGone[j-1].hi, b)
	if err := r.refill(fa, fb); err != nil {
		panic(fmt.Errorf("decompressing again range lists whose pages were dropped: %w", err))
	}
	for _, g := range sd.rngGone[i:j] {
		sd.fills++
		sd.filled.rng = append(sd.filled.rng, [2]int{max(g.lo, a), min(g.hi, b)})
	}
	var keep []dropSpan
	if g := sd.rngGone[i]; g.lo < fa {
		keep = append(keep, dropSpan{lo: g.lo, hi: fa, gone: true})
	}
	if g := sd.rngGone[j-1]; fb < g.hi {
		keep = append(keep, dropSpan{lo: fb, hi: g.hi, gone: true})
	}
	sd.rngGone = slices.Replace(sd.rngGone, i, j, keep...)
}
