package symbolize

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
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
	// keep is where decodes put what decoded units keep (under mu).
	keep unitSlabs
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
	onHeap    bool // tests: keep decoded tables on the heap (see moveOffHeap)

	// drop gives back the pages of decoded units' sections (nil when
	// no section is decompressed into anonymous memory).
	drop *sectionDrop

	// dies reads DIEs for decodeUnit without debug/dwarf (nil for
	// relocatable files, read through ef.DWARF); dieRd is its reader,
	// reused from unit to unit (under mu).
	dies  *dieSections
	dieRd dieReader

	// Decoded units are bounded by budget bytes (negative: no bound).
	// used is their total (under mu); epoch counts decodes (written
	// under mu, read by lookups, which stamp a unit's lastUse with it);
	// evictions counts units dropped to stay within the budget.
	budget    int64
	used      int64
	epoch     atomic.Uint64
	evictions int

	// secs holds the sections d reads, outside the Go heap (see
	// region): unmapped when every unit is decoded, or at Close.
	secs regionSet
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

// scope is a function (subprogram) or an inlined call in a unit. Children
// of a scope are the inlined calls directly inside it, linked through
// firstChild/nextSibling. A scope has its first address range inline and
// any further ranges in unitInfo.extra, so that the tens of thousands of
// scopes of a large unit cost no allocation each.
//
// Addresses are 32-bit offsets from the unit's base (unitInfo.base, the
// lowest start of the unit's code ranges), which halves the ranges: a
// scope is 32 bytes instead of 56 with 64-bit addresses, an extra range 8
// instead of 16, and scopes are four tenths of a large binary's decoded
// tables. A range reaching outside [base, base+2³²-1) is clipped to it:
// only addresses in the unit's own ranges are ever looked up in it, and
// decoding fails for a unit whose ranges span more than that (a single
// compilation unit with 4 GiB of code between its ends).
type scope struct {
	lo, hi uint32 // first range, from unitInfo.base
	// extra is the start of the scope's further ranges in
	// unitInfo.extra; they end where the next scope's start
	// (unitInfo.extraOf), as scopes and their ranges are appended
	// together.
	extra                   int32
	name                    uint32 // index in unitInfo.names; the top bit (nameLinkage) marks a linkage name
	firstChild, nextSibling int32  // -1 for none; firstChild <= -2: many children, indexed in unitInfo.kidRuns[-2-firstChild]
	// Inlined calls: where the call was (callSite). The call file and
	// column share callFC, as callFile<<16 | callCol, when both are
	// below 0xffff (every inlined call in the Go compiler: 63,247 of
	// its 83,496 scopes); otherwise callFC is callWide and the pair is
	// in unitInfo.wide. That takes a scope from 36 to 32 bytes.
	callLine uint32
	callFC   uint32
}

// callWide marks a scope whose call file and column are in unitInfo.wide.
const callWide = ^uint32(0)

// wideCall is the call file and column of a scope whose callFC could not
// hold them.
type wideCall struct {
	scope     int32
	file, col uint32
}

// setCall sets the call site of s, an inlined call; wide receives the
// scope's file and column when they do not fit callFC.
func (s *scope) setCall(id int32, file, line, col uint32, wide *growBuf[wideCall]) {
	s.callLine = line
	if file < 0xffff && col < 0xffff {
		s.callFC = file<<16 | col
		return
	}
	s.callFC = callWide
	wide.add(wideCall{id, file, col})
}

// span32 is an address range as offsets from a unit's base.
type span32 struct{ lo, hi uint32 }

// kidRun is where a scope with many children has their sorted ranges in
// unitInfo.kids and kidsHi.
type kidRun struct{ start, n int32 }

// rel returns the offset of addr from base, clipped to what 32 bits hold
// (see scope).
func rel(addr, base uint64) uint32 {
	if addr <= base {
		return 0
	}
	return uint32(min(addr-base, 1<<32-1))
}

// clampU32 is n bounded to [0, 2³²-1], on 32-bit hosts too.
func clampU32(n int) uint32 {
	if n < 0 {
		return 0
	}
	if uint64(n) > 1<<32-1 {
		return 1<<32 - 1
	}
	return uint32(n)
}

// nameLinkage marks scope.name as a linkage name.
const nameLinkage = 1 << 31

type unitInfo struct {
	size    int64  // approximate bytes, for dwarfIndex.budget
	goUnit  bool   // DW_LANG_Go: DW_AT_name is already the symbol name
	base    uint64 // the address scope, extra, kids and roots offsets count from
	lines   lineTable
	extra   []span32
	kids    []rootRange // child ranges of scopes with many children, sorted by lo per scope
	kidsHi  []uint32    // prefix maximum of kids[i].hi within each scope's run
	kidRuns []kidRun
	// files maps the unit's file indexes (line rows, call files) to
	// fileTab, the index's table of names as it was when the unit was
	// decoded: 4 bytes per file and unit instead of a string header
	// (12,573 of them in the Go compiler's units, 1,343 names).
	files   []uint32
	fileTab []string
	names   []string // scope names, each once per unit
	scopes  []scope
	roots   []rootRange // subprogram ranges, sorted by lo
	rootHi  []uint32    // prefix maximum of roots[i].hi
	wide    []wideCall  // call sites too wide for scope.callFC, by scope
}

// callSite returns where inlined call i was made.
func (ui *unitInfo) callSite(i int32) (file, line, col uint32) {
	s := &ui.scopes[i]
	if s.callFC != callWide {
		return s.callFC >> 16, s.callLine, s.callFC & 0xffff
	}
	k := sort.Search(len(ui.wide), func(k int) bool { return ui.wide[k].scope >= i })
	if k < len(ui.wide) && ui.wide[k].scope == i {
		return ui.wide[k].file, s.callLine, ui.wide[k].col
	}
	return ^uint32(0), s.callLine, 0 // not reached: setCall adds it
}

// rootRange is a range of a scope, as offsets from the unit's base.
type rootRange struct {
	lo, hi uint32
	scope  int32
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
			f, def, p, err := b.openDebugFile()
			if err != nil {
				b.dwErr = err
				b.warn("%s: separate debug file not used, no file:line answers: %v", b.path, err)
				return
			}
			if def == nil {
				return
			}
			if !hasDWARF(def) {
				// A debug file with only a .symtab still helps the
				// symbol table of a stripped binary.
				b.dbgFile, b.dbgPath = f, p
				b.dw = &dwarfIndex{ef: def, name: p}
				return
			}
			b.dbgFile, b.dbgPath = f, p
			ef, name, ra = def, p, f
		}
		dw, err := newDWARFIndex(ef, ra, name, b.execRange)
		if dw != nil {
			dw.budget = b.opts.MaxDecodedDWARF
			if dw.budget == 0 {
				dw.budget = DefaultMaxDecodedDWARF
			}
		}
		if err != nil {
			b.dwErr = err
			b.warn("%v (answers fall back to symbol names, without file:line)", err)
			if b.dbgFile != nil {
				b.dw = &dwarfIndex{ef: ef, name: name}
			}
			return
		}
		dw.symName = b.sharedSymName
		b.dw = dw
	})
	return b.dw
}

func newDWARFIndex(ef *elf.File, ra io.ReaderAt, name string, exec [][2]uint64) (*dwarfIndex, error) {
	x := &dwarfIndex{ef: ef, name: name, exec: exec, names: map[dwarf.Offset]dieName{}}
	var info, line []byte
	var secs map[string][]byte
	err := safely(name, func() error {
		d, sec, err := loadDWARFSections(ef, ra, &x.secs)
		if err != nil {
			return err
		}
		x.d, secs = d, sec
		info, line = sec["info"], sec["line"]
		r := d.Reader()
		for {
			e, err := r.Next()
			if err != nil {
				return err
			}
			if e == nil {
				break
			}
			if e.Tag != dwarf.TagCompileUnit && e.Tag != dwarf.TagPartialUnit {
				r.SkipChildren()
				continue
			}
			u := int32(len(x.units))
			x.units = append(x.units, unitSlot{entry: ownEntry(e)})
			rs, err := d.Ranges(e)
			if err == nil {
				for _, rg := range rs {
					if rg[1] > rg[0] && x.inExec(rg[0]) {
						x.ranges = append(x.ranges, cuRange{rg[0], rg[1], u})
					}
				}
			}
			r.SkipChildren()
		}
		return nil
	})
	if err != nil {
		x.secs.unmapAll()
		return nil, fmt.Errorf("%s: DWARF: %w", name, err)
	}
	x.units = append([]unitSlot(nil), x.units...) // exact size
	// Only units with code ranges are ever decoded (unitsFor finds
	// units by range): units of data or types alone must not keep
	// pending above 0, or the sections would never be released.
	inRanges := make(map[int32]bool)
	for _, r := range x.ranges {
		inRanges[r.unit] = true
	}
	x.pending = len(inRanges)
	for u := range x.units {
		x.units[u].base = ^uint64(0)
	}
	for _, r := range x.ranges {
		s := &x.units[r.unit]
		s.base, s.top = min(s.base, r.lo), max(s.top, r.hi)
	}
	x.hasData = x.d != nil
	if secs != nil {
		x.dies = newDIESections(secs, ef.ByteOrder)
		x.dies.touchRng = x.rngTouch
	}
	if x.hasData {
		x.initDrop(info, line, secs["rnglists"])
	}
	if x.pending == 0 {
		x.release()
	}
	sort.Slice(x.ranges, func(i, j int) bool { return x.ranges[i].lo < x.ranges[j].lo })
	x.maxHi = make([]uint64, len(x.ranges))
	var m uint64
	for i, r := range x.ranges {
		m = max(m, r.hi)
		x.maxHi[i] = m
	}
	return x, nil
}

// loadDWARFSections is elf.File.DWARF without the sections a symbolizer
// never reads: .debug_loc/.debug_loclists (variable locations, as large as
// .debug_info in Go binaries), .debug_frame, .debug_aranges, .debug_types.
// Each is decompressed in full when loaded, so skipping them saves both
// time to first answer and memory. Relocatable files (kernel modules) need
// relocations applied and go through elf.File.DWARF.
func loadDWARFSections(ef *elf.File, ra io.ReaderAt, rs *regionSet) (*dwarf.Data, map[string][]byte, error) {
	if ef.Type == elf.ET_REL {
		d, err := ef.DWARF()
		return d, nil, err
	}
	sec, err := loadSections(ef, ra, []string{"abbrev", "info", "str", "line", "ranges", "addr", "line_str", "rnglists", "str_offsets"}, rs)
	if err != nil {
		return nil, nil, err
	}
	if f := osFile(ra); testHookMapped != nil && f != nil {
		testHookMapped(f)
	}
	d, err := dwarf.New(sec["abbrev"], nil, nil, sec["info"], sec["line"], nil, sec["ranges"], sec["str"])
	if err != nil {
		return nil, nil, err
	}
	for _, n := range []string{"addr", "line_str", "rnglists", "str_offsets"} {
		if b := sec[n]; b != nil {
			if err := d.AddSection(".debug_"+n, b); err != nil {
				return nil, nil, err
			}
		}
	}
	return d, sec, nil
}

// ownEntry returns e with its byte-slice attribute values (blocks,
// expressions, 16-byte constants) copied: debug/dwarf returns them as
// views of .debug_info, which may be a mapping released when every unit
// is decoded or at Close, while the unit entries stay for the life of the
// index. Strings are copies already.
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
		out, ok = ui.frames(b, addr, buf[:0])
		return ok
	})
	return out, ok, err
}

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
	// walk gives the unit's section bytes back: from decodeUnit's
	// walked, or after it when it failed first.
	walked := false
	walk := func(ok bool) {
		x.rngDecoded(u, ok)
		if ok {
			x.dropUnit(u)
		}
		x.redropDecoded()
		walked = true
	}
	err := safely(x.name, func() error {
		x.needUnit(u)
		var err error
		if s.top-s.base > 1<<32-1 {
			return fmt.Errorf("code ranges [%#x, %#x) span more than 4 GiB", s.base, s.top)
		}
		ui, err = x.decodeUnit(s.entry, s.base, func() { x.dropUnitLines(u) }, func() { walk(true) })
		return err
	})
	if !walked {
		walk(err == nil)
	}
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
		s.err = fmt.Errorf("%s: DWARF unit at offset %#x: %w", x.name, s.entry.Offset, err)
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
	x.dies, x.dieRd = nil, dieReader{}
	x.drop = nil
	x.secs.unmapAll()
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
		// Units are given back: what is decoded from now on
		// must go with them (see slab).
		x.keep.allocExact()
		x.used -= v.info.Load().size
		v.info.Store(nil)
		x.pending++
		x.evictions++
	}
}

func (ui *unitInfo) frames(b *Binary, addr uint64, buf []Frame) ([]Frame, bool) {
	out, ok := ui.lookupFrames(b, addr, buf)
	// The tables may be off the heap, released when ui is collected
	// (moveOffHeap): ui must outlive every read of them.
	runtime.KeepAlive(ui)
	return out, ok
}

func (ui *unitInfo) lookupFrames(b *Binary, addr uint64, buf []Frame) ([]Frame, bool) {
	row, ok := ui.lines.lookup(addr)
	if !ok || row.end() {
		return buf, false
	}
	// Innermost chain of scopes containing addr. Scope ranges are
	// offsets from ui.base, clipped to 32 bits: an address outside that
	// window is in no scope of the unit.
	var chain [32]int32
	n := 0
	var off uint32
	if addr >= ui.base && addr-ui.base < 1<<32-1 {
		off = uint32(addr - ui.base)
		n = -1
	}
	if n < 0 {
		n = 0
		j := sort.Search(len(ui.roots), func(j int) bool { return ui.roots[j].lo > off }) - 1
		for ; j >= 0 && ui.rootHi[j] > off; j-- {
			if r := ui.roots[j]; off < r.hi {
				chain[0] = r.scope
				n = 1
				break
			}
		}
	}
	for n > 0 && n < len(chain) {
		next := int32(-1)
		if p := &ui.scopes[chain[n-1]]; p.firstChild <= -2 {
			run := ui.kidRuns[-2-p.firstChild]
			kids := ui.kids[run.start : run.start+run.n]
			hi := ui.kidsHi[run.start : run.start+run.n]
			k := sort.Search(len(kids), func(k int) bool { return kids[k].lo > off }) - 1
			for ; k >= 0 && hi[k] > off; k-- {
				if off < kids[k].hi {
					next = kids[k].scope
					break
				}
			}
		} else {
			for c := p.firstChild; c >= 0; c = ui.scopes[c].nextSibling {
				if ui.contains(c, off) {
					next = c
					break
				}
			}
		}
		if next < 0 {
			break
		}
		chain[n] = next
		n++
	}
	file, line, col := ui.file(uint32(row.file)), int(row.line), int(row.col)
	if n == 0 {
		return append(buf, Frame{File: file, Line: line, Column: col}), true
	}
	for k := n - 1; k >= 0; k-- {
		s := &ui.scopes[chain[k]]
		name := ui.names[s.name&^nameLinkage]
		if k == 0 && s.name&nameLinkage == 0 && !ui.goUnit {
			// The DWARF has only a source name (C functions, C++
			// functions in an anonymous namespace). When a symbol
			// starts exactly where the function's range holding
			// addr does, it is the real linkage name of that part
			// (foo.constprop.0, _ZN12_GLOBAL__N_1..., and for the
			// cold part of a hot/cold split, foo.cold): use it.
			// binutils does this for the first range only, and
			// caches the answer per function, so that addr2line
			// names a cold part foo or foo.cold depending on which
			// address it was asked first (_bfd_dwarf2_find_nearest_line,
			// bfd/dwarf2.c); llvm-symbolizer names every part after
			// its symbol, and perf report names code by symbol only.
			if sym, ok := b.lookupSym(addr); ok && sym.start == ui.base+uint64(ui.rangeStart(chain[k], off)) {
				name = sym.name
			}
		}
		buf = append(buf, Frame{
			Function: b.demangle(name),
			RawName:  name,
			File:     file,
			Line:     line,
			Column:   col,
			Inlined:  k > 0,
		})
		cf, cl, cc := ui.callSite(chain[k])
		file, line, col = ui.file(cf), int(cl), int(cc)
	}
	return buf, true
}

func (ui *unitInfo) file(i uint32) string {
	if int(i) < len(ui.files) {
		return ui.fileTab[ui.files[i]]
	}
	return ""
}

// manyKids is the number of children above which a scope's children are
// searched by address rather than scanned: a large Go or C++ function can
// have over a thousand inlined calls directly inside it.
const manyKids = 16

// indexKids builds the sorted child ranges of scopes with many children
// and points their firstChild at them (it reads only the children's
// nextSibling, and children come after their parent, so every chain is
// still whole when walked).
func (b *unitBuild) indexKids() error {
	scopes := b.scopes.s
	for i := range scopes {
		p := &scopes[i]
		n := 0
		for c := p.firstChild; c >= 0 && n <= manyKids; c = scopes[c].nextSibling {
			n++
		}
		if n <= manyKids {
			continue
		}
		start := len(b.kids.s)
		for c := p.firstChild; c >= 0; c = scopes[c].nextSibling {
			cs := &scopes[c]
			b.kids.add(rootRange{cs.lo, cs.hi, c})
			for _, r := range extraOf(scopes, b.extra.s, c) {
				b.kids.add(rootRange{r.lo, r.hi, c})
			}
		}
		if len(b.kids.s) > 1<<31-1 || len(b.kidRuns.s) > 1<<31-2 {
			return errors.New("more than 2^31 inlined call ranges in one unit")
		}
		run := b.kids.s[start:]
		sort.Slice(run, func(a, b int) bool { return run[a].lo < run[b].lo })
		addMaxHi(&b.kidsHi, run)
		p.firstChild = -2 - int32(len(b.kidRuns.s))
		b.kidRuns.add(kidRun{int32(start), int32(len(run))})
	}
	return nil
}

// addMaxHi appends to out the running maximum of rs[i].hi, which lets a
// search by lo stop at the first range that cannot reach an address (as
// symTable.maxEnd does for symbols).
func addMaxHi(out *growBuf[uint32], rs []rootRange) {
	out.reserve(len(rs))
	var m uint32
	for _, r := range rs {
		m = max(m, r.hi)
		out.add(m)
	}
}

// bytes approximates the unit's memory: its slices and strings.
func (ui *unitInfo) bytes() int64 {
	n := int64(unsafe.Sizeof(*ui)) + int64(ui.lines.size())
	n += int64(len(ui.extra))*8 + int64(len(ui.kids)+len(ui.roots))*12 + int64(len(ui.kidsHi)+len(ui.rootHi))*4 + int64(len(ui.kidRuns))*8
	n += int64(len(ui.scopes))*int64(unsafe.Sizeof(scope{})) + int64(len(ui.wide))*int64(unsafe.Sizeof(wideCall{}))
	for _, f := range ui.files {
		n += 16 + int64(len(ui.fileTab[f]))
	}
	for _, s := range ui.names {
		n += 16 + int64(len(s))
	}
	return n
}

// extraOf returns the further ranges of scope i.
func (ui *unitInfo) extraOf(i int32) []span32 { return extraOf(ui.scopes, ui.extra, i) }

// extraOf returns the further ranges of scopes[i] in extra.
func extraOf(scopes []scope, extra []span32, i int32) []span32 {
	end := int32(len(extra))
	if int(i)+1 < len(scopes) {
		end = scopes[i+1].extra
	}
	return extra[scopes[i].extra:end]
}

// rangeStart returns the start of the range of scope i that holds off.
func (ui *unitInfo) rangeStart(i int32, off uint32) uint32 {
	for _, r := range ui.extraOf(i) {
		if r.lo <= off && off < r.hi {
			return r.lo
		}
	}
	return ui.scopes[i].lo
}

func (ui *unitInfo) contains(i int32, off uint32) bool {
	if s := &ui.scopes[i]; s.lo <= off && off < s.hi {
		return true
	}
	for _, r := range ui.extraOf(i) {
		if r.lo <= off && off < r.hi {
			return true
		}
	}
	return false
}

// skipsChildren reports whether the DIEs below a DIE of this tag are of no
// interest to a decode (nor to keepAllRefNames, which walks as decodeUnit
// does): nothing below them holds code ranges or inlined calls.
func skipsChildren(tag dwarf.Tag) bool {
	switch tag {
	case dwarf.TagStructType, dwarf.TagClassType, dwarf.TagUnionType,
		dwarf.TagEnumerationType, dwarf.TagVariable, dwarf.TagFormalParameter,
		dwarf.TagSubroutineType, dwarf.TagArrayType, dwarf.TagBaseType,
		dwarf.TagTypedef, dwarf.TagPointerType, dwarf.TagConstType,
		dwarf.TagMember, dwarf.TagCallSite, tagGNUCallSite:
		return true
	}
	return false
}

// testHookDIEWalk, when set, is called by decodeUnit as it starts walking
// a unit's DIEs (tests, with x.mu held).
var testHookDIEWalk func()

// decodeUnit reads one unit's line table and its subprogram/inlined
// subroutine tree. Called with x.mu held. linesRead is called once the
// line program is read, before the DIEs are: the caller may give its
// bytes back there. walked is called once the unit's section bytes are
// read for good and the decode can no longer fail, before the tables are
// copied out of their build buffers:
// the caller gives the unit's section pages back there, so that they and
// the tables' two copies are not all resident at once (for the Go
// compiler's largest unit, 4 MB of filled sections and twice 2.7 MB of
// tables: that moment was the batch's peak).
func (x *dwarfIndex) decodeUnit(cu *dwarf.Entry, base uint64, linesRead, walked func()) (*unitInfo, error) {
	// The tables grow in a unitBuild (off the heap once large, see
	// growBuf) and are copied out at their exact size below (off the
	// heap, mostly); the build buffers are unmapped at return. Earlier,
	// heap slices of the last decode were kept and reused, which saved
	// garbage when debug/dwarf made a lot more of it; keeping them (the
	// largest unit's tables, 1.5 MB for the Go compiler, for as long as
	// a unit is left to decode) cost 1.3 MB of peak RSS on the compiler
	// batch for no CPU gained.
	ui := &unitInfo{base: base}
	if lang, ok := cu.Val(dwarf.AttrLanguage).(int64); ok && lang == dwLangGo {
		ui.goUnit = true
	}
	lr, err := x.d.LineReader(cu)
	if err != nil {
		return nil, err
	}
	fileIdx := map[*dwarf.LineFile]uint32{}
	// debug/dwarf joins a DWARF 5 file's directory but, unlike for
	// DWARF 4, does not put a relative directory under the compilation
	// directory. DWARF 5 is recognized by its file 0, which earlier
	// versions do not have.
	compDir, _ := cu.Val(dwarf.AttrCompDir).(string)
	v5 := lr != nil && len(lr.Files()) > 0 && lr.Files()[0] != nil
	fileName := func(lf *dwarf.LineFile) uint32 {
		name := ""
		if lf != nil {
			name = lf.Name
			if v5 {
				name = underCompDir(compDir, name)
			}
		}
		// Units share most file names (a Go unit lists every file
		// it inlined from: 12,573 names in the compiler's units,
		// 1,343 of them distinct): keep each once.
		if in, ok := x.fileIdx[name]; ok {
			return in
		}
		if x.fileIdx == nil {
			x.fileIdx = map[string]uint32{}
		}
		in := uint32(len(x.fileTab))
		x.fileTab = append(x.fileTab, name)
		x.fileIdx[name] = in
		return in
	}
	fileOf := func(lf *dwarf.LineFile) uint32 {
		fi, seen := fileIdx[lf]
		if !seen {
			fi = uint32(len(ui.files))
			ui.files = append(ui.files, fileName(lf))
			fileIdx[lf] = fi
		}
		return fi
	}
	var bld unitBuild
	defer bld.free()
	if lr != nil {
		if err := x.decodeLines(lr, fileOf, &bld.lines); err != nil {
			return nil, err
		}
	}
	// The file table as attributes (DW_AT_call_file) index it; map each
	// entry to our string table.
	var callFiles []uint32
	if lr != nil {
		for _, lf := range lr.Files() {
			callFiles = append(callFiles, fileOf(lf))
		}
	}
	linesRead()
	if testHookDIEWalk != nil {
		testHookDIEWalk()
	}
	// Walk the DIE tree. stack holds, per open DIE with children, the
	// scope that encloses its descendants (-1 outside any function).
	w, err := x.walker(cu)
	if err != nil {
		return nil, err
	}
	var e die
	if _, err := w.next(&e); err != nil {
		return nil, err
	}
	rl := x.unitRanges(cu)
	var rs [][2]uint64
	stack := []int32{-1}
	nameIdx := map[string]uint32{}
	if !cu.Children {
		stack = nil
	}
	for len(stack) > 0 {
		ok, err := w.next(&e)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if e.tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		cur := stack[len(stack)-1]
		encl := cur
		switch e.tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			if e.tag == dwarf.TagSubprogram {
				x.keepRefName(&e)
			}
			rs, err = rl.of(&e, rs[:0])
			if err != nil || len(rs) == 0 {
				break
			}
			if e.tag == dwarf.TagInlinedSubroutine && cur < 0 {
				break
			}
			if e.tag == dwarf.TagSubprogram && !x.inExec(rs[0][0]) {
				break
			}
			if len(bld.scopes.s) >= 1<<31-1 || len(bld.extra.s)+len(rs) > 1<<31-1 {
				return nil, errors.New("more than 2^31 scopes or ranges in one unit")
			}
			sc := scope{lo: rel(rs[0][0], base), hi: rel(rs[0][1], base), extra: int32(len(bld.extra.s)), firstChild: -1, nextSibling: -1}
			for _, rg := range rs[1:] {
				bld.extra.add(span32{rel(rg[0], base), rel(rg[1], base)})
			}
			name, linkage, view := x.nameOf(&e, 0)
			ni, seen := nameIdx[name]
			if !seen {
				if uint64(len(ui.names)) >= nameLinkage {
					return nil, errors.New("more than 2^31 function names in one unit")
				}
				ni = uint32(len(ui.names))
				if view && x.symName != nil && e.tag == dwarf.TagSubprogram {
					if s, ok := x.symName(rs[0][0], name); ok {
						name, view = s, false
					}
				}
				if view {
					name = x.keep.strs.clone(name)
				}
				ui.names = append(ui.names, name)
				nameIdx[name] = ni
			}
			sc.name = ni
			if linkage {
				sc.name |= nameLinkage
			}
			inlined := e.tag == dwarf.TagInlinedSubroutine
			id := int32(len(bld.scopes.s))
			if inlined {
				file, line, col := ^uint32(0), uint32(0), uint32(0)
				if v := e.callFile; e.has&hasCallFile != 0 && v >= 0 && v < int64(len(callFiles)) {
					file = callFiles[v]
				}
				if v := e.callLine; e.has&hasCallLine != 0 && v > 0 {
					line = uint32(v)
				}
				if v := e.callCol; e.has&hasCallCol != 0 && v > 0 {
					col = uint32(v)
				}
				sc.setCall(id, file, line, col, &bld.wide)
			}
			if inlined {
				sc.nextSibling = bld.scopes.s[cur].firstChild
				bld.scopes.s[cur].firstChild = id
			}
			bld.scopes.add(sc)
			if !inlined {
				for _, rg := range rs {
					if lo, hi := rel(rg[0], base), rel(rg[1], base); hi > lo {
						bld.roots.add(rootRange{lo, hi, id})
					}
				}
			}
			encl = id
		default:
			if skipsChildren(e.tag) {
				if err := w.skipChildren(&e); err != nil {
					return nil, err
				}
				continue
			}
		}
		if e.children {
			stack = append(stack, encl)
		}
	}
	if err := bld.indexKids(); err != nil {
		return nil, err
	}
	roots := bld.roots.s
	sort.Slice(roots, func(i, j int) bool { return roots[i].lo < roots[j].lo })
	addMaxHi(&bld.rootHi, roots)
	ui.files = x.keep.files.copyOf(ui.files)
	ui.fileTab = x.fileTab
	ui.names = x.keep.names.copyOf(ui.names)
	walked()
	// The tables are copied out of bld, which is freed on return:
	// into one mapping of the unit's own (which frees each build
	// buffer as soon as it is copied), or onto the heap.
	ui.lines = bld.lines.table()
	ui.extra, ui.kids, ui.kidsHi, ui.kidRuns = bld.extra.s, bld.kids.s, bld.kidsHi.s, bld.kidRuns.s
	ui.scopes, ui.roots, ui.rootHi, ui.wide = bld.scopes.s, bld.roots.s, bld.rootHi.s, bld.wide.s
	if x.onHeap || !ui.moveOffHeap(&bld) {
		// In one object of their exact size: a decoded unit stays
		// for the life of the Binary, and growth by doubling leaves
		// up to half of each slice unused.
		ui.packOnHeap(&bld, &x.keep.words)
	}
	ui.size = ui.bytes()
	return ui, nil
}

// unitBuild holds a unit's tables while decodeUnit builds them (see
// growBuf).
type unitBuild struct {
	lines   lineEncoder
	extra   growBuf[span32]
	kids    growBuf[rootRange]
	kidsHi  growBuf[uint32]
	kidRuns growBuf[kidRun]
	scopes  growBuf[scope]
	roots   growBuf[rootRange]
	rootHi  growBuf[uint32]
	wide    growBuf[wideCall]
}

// free releases b's buffers.
func (b *unitBuild) free() {
	b.lines.free()
	b.extra.free()
	b.kids.free()
	b.kidsHi.free()
	b.kidRuns.free()
	b.scopes.free()
	b.roots.free()
	b.rootHi.free()
	b.wide.free()
}

// rangeLists reads the ranges of the DIEs of one unit, as x.d.Ranges
// would for their entries. For an entry with DW_AT_ranges, debug/dwarf
// reads the unit's own entry again to find the base address of the list
// (Data.baseAddressForEntry), allocating it anew for every function and
// inlined call with more than one range. The unit's entry is at hand, so
// the list is read through a copy of it (tmpl) that carries the DIE's
// DW_AT_ranges instead: Ranges then takes the base address and
// DW_AT_addr_base from that copy, as it would from the unit's entry, and
// adds no range of its own (the copy has no DW_AT_high_pc). The DIE's own
// DW_AT_low_pc/DW_AT_high_pc pair comes first, as in Ranges.
type rangeLists struct {
	d    *dwarf.Data
	tmpl *dwarf.Entry
	last *dwarf.Field // tmpl's DW_AT_ranges
	// rng is .debug_rnglists when the unit's lists are read from it
	// (DWARF 5 read by the DIE reader), with the unit's address size:
	// each list is passed to x.rngTouch before it is read.
	x        *dwarfIndex
	rng      []byte
	addrSize int
}

func (x *dwarfIndex) unitRanges(cu *dwarf.Entry) rangeLists {
	tmpl := &dwarf.Entry{Offset: cu.Offset, Tag: dwarf.TagCompileUnit}
	for _, f := range cu.Field {
		if f.Attr != dwarf.AttrHighpc && f.Attr != dwarf.AttrRanges {
			tmpl.Field = append(tmpl.Field, f)
		}
	}
	tmpl.Field = append(tmpl.Field, dwarf.Field{})
	rl := rangeLists{d: x.d, tmpl: tmpl, last: &tmpl.Field[len(tmpl.Field)-1], x: x}
	if x.dies != nil && x.dieRd.h.version >= 5 && x.dieRd.h.die == int(cu.Offset) {
		rl.rng, rl.addrSize = x.dies.rnglists, x.dieRd.h.addrSize
	}
	return rl
}

// of appends the ranges of e (not a unit entry) to buf.
func (rl rangeLists) of(e *die, buf [][2]uint64) ([][2]uint64, error) {
	if e.has&hasLow != 0 && e.has&hasHigh != 0 {
		hi := e.high
		if e.highConst {
			hi = e.low + uint64(e.highOff)
		}
		buf = append(buf, [2]uint64{e.low, hi})
	}
	if e.seen&hasRanges == 0 {
		return buf, nil
	}
	*rl.last = e.rangesField()
	if rl.rng != nil {
		var off int64 = -1
		switch v := rl.last.Val.(type) {
		case int64:
			if rl.last.Class == dwarf.ClassRangeListPtr {
				off = v
			}
		case uint64:
			if rl.last.Class == dwarf.ClassRngList && v <= uint64(len(rl.rng)) {
				off = int64(v)
			}
		}
		if off >= 0 && off < int64(len(rl.rng)) {
			// The list's first byte must be readable before
			// its end can be found.
			rl.x.rngTouch(int(off), int(off)+1)
			rl.x.rngTouch(int(off), rnglistEnd(rl.rng, int(off), rl.addrSize))
		}
	}
	rs, err := rl.d.Ranges(rl.tmpl)
	if err != nil {
		return nil, err
	}
	return append(buf, rs...), nil
}

// lineSeq is one sequence of a unit's line program: where it starts in the
// program and the addresses it covers.
type lineSeq struct {
	pos    dwarf.LineReaderPos
	lo, hi uint64
	rows   int
}

// decodeLines reads a unit's line program into enc, which the caller
// frees. Rows must go in by address, and sequences need not come in
// address order (GCC puts .text.unlikely and .text.startup code in
// sequences of their own). Most units' sequences do (every Go unit's), so
// a first pass encodes rows as they come, and gives up at the first
// sequence that starts below the end of the one before it; then a pass
// finds each sequence's position and extent, and another decodes the
// sequences in address order straight into the table. Neither needs an
// intermediate slice of rows, which for Go's runtime unit would be half a
// million; the first needs no record per sequence either (a Go unit has
// one per function, 150 bytes each: 2.5 MB of them for the compiler's
// largest unit, live while it was decoded). Sequences that overlap, or
// rows that go backwards inside a sequence, make it fall back to
// collecting and sorting all rows (the same result when neither happens,
// as TestDecodeLinesOrder checks). Sequences of discarded code (see
// inExec) are dropped, and so is an unterminated last sequence, which has
// no extent.
func (x *dwarfIndex) decodeLines(lr *dwarf.LineReader, fileOf func(*dwarf.LineFile) uint32, enc *lineEncoder) error {
	var e dwarf.LineEntry
	var lastFile *dwarf.LineFile
	var lastIdx uint32
	toRow := func(e *dwarf.LineEntry) lineRow {
		if e.File != lastFile || lastFile == nil {
			lastFile, lastIdx = e.File, fileOf(e.File)
		}
		r := lineRow{addr: e.Address, file: lastIdx, line: clampU32(e.Line), col: clampU32(e.Column)}
		if e.EndSequence {
			r.file = rowEnd
		}
		return r
	}
	if !x.sortLines {
		ok, err := x.linesInOrder(lr, &e, toRow, enc)
		if err != nil || ok {
			return err
		}
		enc.free()
		lr.Reset()
	}
	var seqs []lineSeq
	nrows := 0
	start := true
	var cur lineSeq
	for {
		pos := lr.Tell()
		if err := lr.Next(&e); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		if start {
			cur, start = lineSeq{pos: pos, lo: e.Address}, false
		}
		cur.rows++
		if e.EndSequence {
			cur.hi = e.Address
			if x.inExec(cur.lo) {
				seqs = append(seqs, cur)
				nrows += cur.rows
			}
			start = true
		}
	}
	sort.SliceStable(seqs, func(i, j int) bool {
		if seqs[i].lo != seqs[j].lo {
			return seqs[i].lo < seqs[j].lo
		}
		return seqs[i].hi < seqs[j].hi
	})
	ordered := true
	for i := 1; i < len(seqs); i++ {
		if seqs[i].lo < seqs[i-1].hi {
			ordered = false
			break
		}
	}
	// each calls fn on every row of every kept sequence, in seqs order.
	each := func(fn func(r lineRow) error) error {
		for _, s := range seqs {
			lr.Seek(s.pos)
			for {
				if err := lr.Next(&e); err != nil {
					return err // EOF cannot happen: the sequence ended in pass 1
				}
				if err := fn(toRow(&e)); err != nil {
					return err
				}
				if e.EndSequence {
					break
				}
			}
		}
		return nil
	}
	if ordered && !x.sortLines {
		enc.reserve(nrows)
		err := each(enc.add)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errLineOrder) {
			return err
		}
		enc.free()
	}
	rows := make([]lineRow, 0, nrows)
	if err := each(func(r lineRow) error { rows = append(rows, r); return nil }); err != nil {
		return err
	}
	// The rows came in sequence order (by start, then end), so a stable
	// sort by address keeps a sequence's own rows in program order and
	// puts the end of a sequence before the start of one that begins
	// where it ends. A row at a sequence's end address has no extent
	// (DWARF 5 section 6.2.5.3: the end_sequence row's address is one
	// past the last byte), so it must not win over the end row.
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].addr < rows[j].addr })
	enc.reserve(len(rows))
	for _, r := range rows {
		if err := enc.add(r); err != nil {
			return err
		}
	}
	return nil
}

// linesInOrder is decodeLines' first pass: it encodes the rows of the
// kept sequences as they come, and reports false (enc then holds a part
// of the table) at the first sequence that starts below the end of the
// previous kept one, or row below the previous row. When it reports
// true, the table is what the pass that sorts sequences by (start, end)
// would build: each kept sequence starts at or after the end of the one
// before, so that order is the program's.
func (x *dwarfIndex) linesInOrder(lr *dwarf.LineReader, e *dwarf.LineEntry, toRow func(*dwarf.LineEntry) lineRow, enc *lineEncoder) (bool, error) {
	var prevHi uint64
	var mark lineMark
	start, keep := true, false
	for {
		if err := lr.Next(e); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return false, err
		}
		if start {
			start = false
			keep = x.inExec(e.Address)
			if keep && e.Address < prevHi {
				return false, nil
			}
			mark = enc.mark()
		}
		if keep {
			if err := enc.add(toRow(e)); err != nil {
				if errors.Is(err, errLineOrder) {
					return false, nil
				}
				return false, err
			}
		}
		if e.EndSequence {
			if keep {
				prevHi = e.Address
			}
			start = true
		}
	}
	if !start && keep {
		enc.rollback(mark) // the unterminated last sequence
	}
	return true, nil
}

// underCompDir places a DWARF 5 file name that is still relative after
// its directory was joined under the compilation directory. Directory 0 is
// the compilation directory itself (DWARF 5 section 6.2.4.1), so a name
// already under it is left alone rather than prefixed twice.
func underCompDir(compDir, name string) string {
	if compDir == "" || path.IsAbs(name) {
		return name
	}
	cd := path.Clean(compDir)
	if cd != "." && (name == cd || strings.HasPrefix(name, cd+"/")) {
		return name
	}
	return path.Join(compDir, name)
}

// nameOf returns the linkage name of a subprogram DIE (linkage true), else
// its DW_AT_name, following DW_AT_abstract_origin and DW_AT_specification
// (an inlined or out-of-line instance names nothing itself). depth bounds
// reference cycles in malformed input. view reports a name that may be a
// view of the section (see die), which must be copied to be kept; the
// names of referenced DIEs come from the name caches and are the caches'
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

func (x *dwarfIndex) nameAt(off dwarf.Offset, depth int) dieName {
	if dn, ok := x.names[off]; ok {
		return dn
	}
	if sd := x.drop; sd != nil {
		if dn, ok := sd.refNames[off]; ok {
			return dn
		}
	}
	if dn, ok := x.refName(off); ok {
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
