package symbolize

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/perfcheck/perfcheck/internal/budget"
)

// dwarfIndex answers lookups from DWARF. The unit table (address ranges of
// each compilation unit) is built when the index is created; a unit's line
// rows and function/inline tree are decoded the first time an address falls
// in it, under mu, and published with an atomic pointer so that lookups in
// decoded units take no lock.
type dwarfIndex struct {
	d    *dwarf.Data
	ef   *elf.File // the file the DWARF came from (binary or debug file)
	name string    // its path, for errors

	ranges []cuRange // sorted by lo
	maxHi  []uint64  // prefix maximum of ranges[i].hi
	units  []unitSlot

	mu sync.Mutex // serializes decoding (debug/dwarf readers share caches)
	// names caches the names of DIEs that abstract origins and
	// specifications refer to, across units (LTO and partial units
	// refer across); namesBytes approximates its memory, which counts
	// against the budget like decoded units.
	names      map[dwarf.Offset]dieName
	namesBytes int64
	// File names of decoded units, each kept once (under mu): fileTab
	// only grows (its elements are never written again, so a unit may
	// keep a copy of its header and read it without mu), fileIdx finds
	// a name in it.
	fileTab []string
	fileIdx map[string]uint32
	pending int         // units with code ranges neither decoded nor failed; at 0, d and names are dropped
	hasData bool        // d was set at creation; immutable, unlike d
	exec    [][2]uint64 // executable sections of the running binary

	// symName, when set, returns the symbol table's copy of a
	// function's name at its address (Binary.sharedSymName).
	symName func(addr uint64, name string) (string, bool)

	sortLines bool // tests: always collect and sort line rows (decodeLines' fallback)

	// dies reads DIEs for decodeUnit without debug/dwarf (nil only where
	// a benchmark compares with debug/dwarf's Reader); dieRd is its
	// reader, reused from unit to unit (under mu).
	dies  *dieSections
	dieRd dieReader
	// lines are the sections a line program's header reads, checked
	// before debug/dwarf reads it (checkLineTables).
	lines *lineSections
	// infoLen is the size of .debug_info, which bounds how many
	// entries debug/dwarf's Reader may give (see errStuck).
	infoLen int

	// warnf records a warning of the binary (Binary.Warnings), once per
	// unit that cannot be decoded.
	warnf func(format string, args ...any)
	// bud is the run's decompression budget, of which the decompressed
	// sections hold reserved bytes until release.
	bud      *budget.Budget
	reserved int64

	// Decoded units are bounded by budget bytes (negative: no bound).
	// used is their total (under mu); epoch counts decodes (written
	// under mu, read by lookups, which stamp a unit's lastUse with it);
	// evictions counts units dropped to stay within the budget.
	budget    int64
	used      int64
	epoch     atomic.Uint64
	evictions int
}

type cuRange struct {
	lo, hi uint64
	unit   int32
}

type unitSlot struct {
	entry *dwarf.Entry
	// base and top are the lowest start and highest end of the unit's
	// code ranges (dwarfIndex.ranges): its decoded tables hold addresses
	// as 32-bit offsets from base (see scope).
	base, top uint64

	info    atomic.Pointer[unitInfo]
	lastUse atomic.Uint64 // dwarfIndex.epoch at its last lookup
	err     error         // decoding error, kept so it is reported once per lookup
}

type dieName struct {
	name    string
	linkage bool
}

// loadDWARF returns the DWARF index of the binary or of its separate debug
// file, nil when there is none (or it cannot be decoded: the error is kept
// in b.dwErr and reported by Warnings, and the symbol table still answers).
func (b *Binary) loadDWARF() *dwarfIndex {
	b.dwOnce.Do(func() {
		if b.ef == nil {
			return
		}
		ef, name, ra := b.ef, b.path, io.ReaderAt(b.f)
		if !hasDWARF(ef) {
			var ok bool
			if ef, name, ra, ok = b.debugDWARF(); !ok {
				return
			}
		}
		dw, err := newDWARFIndex(ef, ra, name, b.execRange, b.bud)
		if err != nil {
			b.dwErr = err
			b.warn("%v (answers fall back to symbol names, without file:line)", err)
			if b.dbgFile != nil {
				b.dw = &dwarfIndex{ef: ef, name: name}
			}
			return
		}
		dw.budget = b.opts.MaxDecodedDWARF
		if dw.budget == 0 {
			dw.budget = DefaultMaxDecodedDWARF
		}
		dw.symName = b.sharedSymName
		dw.warnf = b.warn
		b.dw = dw
	})
	return b.dw
}

// debugDWARF opens the separate debug file of a binary without DWARF of
// its own and returns what to read DWARF from; ok is false when there is
// nothing to read (no debug file, or one without DWARF, which b.dw then
// holds for its symbol table).
func (b *Binary) debugDWARF() (ef *elf.File, name string, ra io.ReaderAt, ok bool) {
	f, def, p, err := b.openDebugFile()
	if err != nil {
		b.dwErr = err
		b.warn("%s: separate debug file not used, no file:line answers: %v", b.path, err)
		return nil, "", nil, false
	}
	if def == nil {
		return nil, "", nil, false
	}
	b.dbgFile, b.dbgPath = f, p
	if !hasDWARF(def) {
		// A debug file with only a .symtab still helps the symbol
		// table of a stripped binary.
		b.dw = &dwarfIndex{ef: def, name: p}
		return nil, "", nil, false
	}
	return def, p, f, true
}

func newDWARFIndex(ef *elf.File, ra io.ReaderAt, name string, exec [][2]uint64, bud *budget.Budget) (*dwarfIndex, error) {
	x := &dwarfIndex{ef: ef, name: name, exec: exec, names: map[dwarf.Offset]dieName{}, bud: bud}
	err := safely(func() error {
		if err := x.loadSections(ef, ra); err != nil {
			return err
		}
		return x.readUnits()
	})
	if err != nil {
		x.release()
		return nil, named(name+": DWARF", err)
	}
	x.indexUnits()
	x.hasData = x.d != nil
	if x.pending == 0 {
		x.release()
	}
	return x, nil
}

// readUnits reads the unit entries and their code ranges. With the DIE
// reader's table of unit headers it reads each unit's own entry alone:
// debug/dwarf's SkipChildren decodes every entry it skips, each name
// copied, so that a unit whose entries all name one long string would
// cost their count times its length in time before anything is checked.
func (x *dwarfIndex) readUnits() error {
	r := x.d.Reader()
	if x.dies != nil {
		for _, h := range x.dies.units {
			r.Seek(dwarf.Offset(h.die))
			e, err := r.Next()
			if err != nil {
				return err
			}
			if e == nil {
				break
			}
			x.addUnit(e)
		}
		x.units = slices.Clip(x.units)
		return nil
	}
	for n := 0; ; n++ {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			break
		}
		if n > x.infoLen {
			return errStuck
		}
		x.addUnit(e)
		r.SkipChildren()
	}
	x.units = slices.Clip(x.units)
	return nil
}

// addUnit adds the unit whose entry is e, when it is a compilation or
// partial unit, and its code ranges.
func (x *dwarfIndex) addUnit(e *dwarf.Entry) {
	if e.Tag != dwarf.TagCompileUnit && e.Tag != dwarf.TagPartialUnit {
		return
	}
	u := int32(len(x.units))
	x.units = append(x.units, unitSlot{entry: ownEntry(e)})
	if rs, err := x.d.Ranges(e); err == nil {
		for _, rg := range rs {
			if rg[1] > rg[0] && x.inExec(rg[0]) {
				x.ranges = append(x.ranges, cuRange{rg[0], rg[1], u})
			}
		}
	}
}

// indexUnits sorts the unit ranges for lookups and sets each unit's base
// and the count of units left to decode.
func (x *dwarfIndex) indexUnits() {
	// Only units with code ranges are ever decoded (unitsFor finds
	// units by range): units of data or types alone must not keep
	// pending above 0, or the sections would never be released.
	for u := range x.units {
		x.units[u].base = ^uint64(0)
	}
	for _, r := range x.ranges {
		s := &x.units[r.unit]
		if s.base == ^uint64(0) {
			x.pending++
		}
		s.base, s.top = min(s.base, r.lo), max(s.top, r.hi)
	}
	sort.Slice(x.ranges, func(i, j int) bool { return x.ranges[i].lo < x.ranges[j].lo })
	x.maxHi = make([]uint64, len(x.ranges))
	var m uint64
	for i, r := range x.ranges {
		m = max(m, r.hi)
		x.maxHi[i] = m
	}
}

// dwarfSections are the DWARF sections a symbolizer reads. It never reads
// .debug_loc/.debug_loclists (variable locations, as large as .debug_info
// in Go binaries), .debug_frame, .debug_aranges or .debug_types, which
// elf.File.DWARF would decompress in full: skipping them saves both time
// to first answer and memory.
var dwarfSections = []string{"abbrev", "info", "str", "line", "ranges", "addr", "line_str", "rnglists", "str_offsets"}

// loadSections sets x.d, x.dies and x.lines from ef: debug/dwarf over
// dwarfSections, read (and decompressed, reserving from the budget) by
// loadSections. The sections of a relocatable file (kernel modules) are
// relocated first, as elf.File.DWARF relocates them, so that what is
// checked before debug/dwarf reads it is what it reads.
func (x *dwarfIndex) loadSections(ef *elf.File, ra io.ReaderAt) error {
	sec, n, err := loadSections(ef, ra, dwarfSections, account{x.bud, x.name})
	x.reserved += n
	if err != nil {
		return err
	}
	if ef.Type == elf.ET_REL {
		if err := relocate(ef, sec); err != nil {
			return err
		}
	}
	if err := x.reserveUnits(countUnits(sec["info"], ef.ByteOrder)); err != nil {
		return err
	}
	d, err := dwarf.New(sec["abbrev"], nil, nil, sec["info"], sec["line"], nil, sec["ranges"], sec["str"])
	if err != nil {
		return err
	}
	for _, n := range []string{"addr", "line_str", "rnglists", "str_offsets"} {
		if b := sec[n]; b != nil {
			if err := d.AddSection(".debug_"+n, b); err != nil {
				return err
			}
		}
	}
	x.d, x.infoLen = d, len(sec["info"])
	x.dies = newDIESections(sec, ef.ByteOrder)
	x.lines = &lineSections{line: sec["line"], str: sec["str"], lineStr: sec["line_str"], order: ef.ByteOrder}
	return nil
}

// unitBytes is what a unit costs until the sections are released, besides
// its DWARF: debug/dwarf's record of it (made for every unit header at
// once by dwarf.New), the DIE reader's and the unit table's.
const unitBytes = 256

// reserveUnits reserves what n unit headers cost (unitBytes each) from the
// budget, with the sections: .debug_info may hold millions of empty
// units in a few MB, which compress to nothing.
func (x *dwarfIndex) reserveUnits(n int64) error {
	cost := n * unitBytes
	if err := x.bud.Reserve(cost, x.name, fmt.Sprintf("section .debug_info (%d unit headers)", n)); err != nil {
		return err
	}
	x.reserved += cost
	return nil
}

// countUnits returns the number of unit headers of info as dwarf.New
// reads them: each length followed by that many bytes.
func countUnits(info []byte, order binary.ByteOrder) int64 {
	var n int64
	c := cursor{b: info, end: len(info), order: order, sec: ".debug_info"}
	for c.pos < c.end && c.err == nil {
		l := c.fixed(4)
		if l == 0xffffffff {
			l = c.fixed(8)
		}
		if c.err != nil || l > uint64(c.end-c.pos) {
			break
		}
		c.pos += int(l)
		n++
	}
	return n
}

// errStuck is debug/dwarf's Reader giving more entries than .debug_info
// has bytes: a ULEB128 cut short by the end of a unit reads as 0 without
// moving on or failing, so the reader returns the same null entry
// forever.
var errStuck = errors.New(".debug_info: the reader makes no progress (an abbreviation code cut short at the end of a unit)")

// ownEntry returns e with its byte-slice attribute values (blocks,
// expressions, 16-byte constants) copied: debug/dwarf returns them as
// views of .debug_info, which the index drops once every unit is decoded
// (release), while the unit entries stay for the life of the index.
// Strings are copies already.
func ownEntry(e *dwarf.Entry) *dwarf.Entry {
	for i, f := range e.Field {
		if v, ok := f.Val.([]byte); ok {
			e.Field[i].Val = slices.Clone(v)
		}
	}
	return e
}

// inExec reports whether addr lies in an executable section of the running
// binary. Code the linker discarded (--gc-sections, COMDAT duplicates)
// keeps its DWARF with addresses at or near 0; those ranges would shadow
// real code and are dropped, as addr2line and llvm-symbolizer skip them.
func (x *dwarfIndex) inExec(addr uint64) bool {
	if len(x.exec) == 0 {
		return true // ET_REL or no section headers: nothing to check against
	}
	for _, r := range x.exec {
		if r[0] <= addr && addr < r[1] {
			return true
		}
	}
	return false
}

// unitsFor calls fn for each unit whose ranges contain addr, innermost
// (latest start) first, until fn returns true.
func (x *dwarfIndex) unitsFor(addr uint64, fn func(u int32) bool) {
	i := sort.Search(len(x.ranges), func(i int) bool { return x.ranges[i].lo > addr }) - 1
	for ; i >= 0 && x.maxHi[i] > addr; i-- {
		if r := x.ranges[i]; addr < r.hi {
			if fn(r.unit) {
				return
			}
		}
	}
}

// frames looks addr up in DWARF. ok is false when no unit with a line for
// addr covers it.
func (x *dwarfIndex) frames(b *Binary, addr uint64, buf []Frame) (out []Frame, ok bool, err error) {
	if !x.hasData {
		return buf, false, nil
	}
	out = buf
	x.unitsFor(addr, func(u int32) bool {
		ui, uerr := x.unit(u)
		if uerr != nil {
			err = uerr
			return true
		}
		out, ok = ui.lookupFrames(b, addr, buf[:0])
		return ok
	})
	return out, ok, err
}

// unit returns unit u decoded, decoding it on first need.
func (x *dwarfIndex) unit(u int32) (*unitInfo, error) {
	s := &x.units[u]
	if ui := s.info.Load(); ui != nil {
		// Stamp the unit for the budget's LRU; stores only when the
		// epoch moved, so that steady lookups only read shared lines.
		if e := x.epoch.Load(); s.lastUse.Load() != e {
			s.lastUse.Store(e)
		}
		return ui, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if ui := s.info.Load(); ui != nil {
		return ui, nil
	}
	if s.err != nil {
		return nil, s.err
	}
	var ui *unitInfo
	err := safely(func() error {
		if s.top-s.base > 1<<32-1 {
			return fmt.Errorf("code ranges [%#x, %#x) span more than 4 GiB", s.base, s.top)
		}
		var err error
		ui, err = x.decodeUnit(s.entry, s.base)
		return err
	})
	x.pending--
	if err == nil {
		s.lastUse.Store(x.epoch.Add(1))
		x.used += ui.size
		x.evict(u)
	}
	if x.pending == 0 {
		x.release()
	}
	if err != nil {
		s.err = fmt.Errorf("%s: DWARF unit at offset %#x: %w", x.name, s.entry.Offset, malformed(err))
		if x.warnf != nil {
			x.warnf("%v (answers in that unit fall back to symbol names, without file:line)", s.err)
		}
		return nil, s.err
	}
	s.info.Store(ui)
	return ui, nil
}

// release drops the raw sections, the name caches and the DIE reader
// once every unit with code is decoded: they are no longer needed, and are
// as large as the decoded index. Nothing decoded points into them
// (debug/dwarf copies strings, decodeUnit copies the names the DIE reader
// gives as views), and no one else reads them: decoding holds x.mu, or the
// index is not yet published.
func (x *dwarfIndex) release() {
	x.d, x.names, x.namesBytes, x.fileTab, x.fileIdx = nil, nil, 0, nil, nil
	x.dies, x.dieRd, x.lines = nil, dieReader{}, nil
	if x.bud != nil {
		x.bud.Release(x.reserved)
	}
	x.reserved = 0
}

// evict drops the least recently used decoded units other than keep until
// the decoded units fit the budget. Called with x.mu held. A lookup that
// already holds a dropped unit's *unitInfo goes on using it (the pointer
// keeps it alive); later ones decode it again. Sections stay loaded while
// a unit is not decoded (pending > 0), so eviction is always reversible.
// The name cache counts against the budget too and goes first: it only
// saves rereading DIEs, and keep's decode, just finished, has had its use.
func (x *dwarfIndex) evict(keep int32) {
	for x.budget >= 0 && x.used+x.namesBytes > x.budget {
		if x.namesBytes > 0 {
			x.names, x.namesBytes = map[dwarf.Offset]dieName{}, 0
			continue
		}
		victim := int32(-1)
		var oldest uint64
		for i := range x.units {
			if int32(i) == keep || x.units[i].info.Load() == nil {
				continue
			}
			if t := x.units[i].lastUse.Load(); victim < 0 || t < oldest {
				victim, oldest = int32(i), t
			}
		}
		if victim < 0 {
			return // only keep is decoded: it stays, however large
		}
		v := &x.units[victim]
		x.used -= v.info.Load().size
		v.info.Store(nil)
		x.pending++
		x.evictions++
	}
}

// nameOf returns the linkage name of a subprogram DIE (linkage true), else
// its DW_AT_name, following DW_AT_abstract_origin and DW_AT_specification
// (an inlined or out-of-line instance names nothing itself). depth bounds
// reference cycles in malformed input. view reports a name that may be a
// view of the section (see die), which must be copied to be kept; the
// names of referenced DIEs come from the name cache and are the cache's
// own (shared, not copied again, by every unit that inlines them).
func (x *dwarfIndex) nameOf(e *die, depth int) (name string, linkage, view bool) {
	if e.has&hasLinkage != 0 && e.linkage != "" {
		return e.linkage, true, !e.own
	}
	if e.has&hasMIPSLinkage != 0 && e.mipsLinkage != "" {
		return e.mipsLinkage, true, !e.own
	}
	name, view = e.name, !e.own && e.name != "" // "" unless hasName
	if depth > 8 {
		return name, false, view
	}
	for _, ref := range [2]struct {
		bit dieHas
		off dwarf.Offset
	}{{hasOrigin, e.origin}, {hasSpec, e.spec}} {
		if e.has&ref.bit == 0 {
			continue
		}
		dn := x.nameAt(ref.off, depth+1)
		if dn.linkage {
			return dn.name, true, false
		}
		if name == "" {
			name, view = dn.name, false
		}
	}
	return name, false, view
}

// nameAt returns the name of the DIE at off, through the name cache.
func (x *dwarfIndex) nameAt(off dwarf.Offset, depth int) dieName {
	if dn, ok := x.names[off]; ok {
		return dn
	}
	r := x.d.Reader()
	r.Seek(off)
	e, err := r.Next()
	var dn dieName
	if err == nil && e != nil {
		var d die
		dieFromEntry(e, &d)
		dn.name, dn.linkage, _ = x.nameOf(&d, depth) // debug/dwarf's copies
	}
	x.names[off] = dn
	x.namesBytes += nameEntryBytes + int64(len(dn.name))
	return dn
}

// nameEntryBytes approximates the memory of one entry of the name cache
// besides the name's bytes: key, string header and flag, and the map's
// own overhead per entry.
const nameEntryBytes = 64

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name, the pre-DWARF 4
// spelling of DW_AT_linkage_name that GCC and Clang still emit sometimes.
const attrMIPSLinkageName dwarf.Attr = 0x2007

// dwLangGo is DW_LANG_Go.
const dwLangGo = 0x16

// tagGNUCallSite is DW_TAG_GNU_call_site, GCC's pre-DWARF 5 call site.
const tagGNUCallSite dwarf.Tag = 0x4109
