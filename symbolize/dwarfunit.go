package symbolize

import (
	"debug/dwarf"
	"errors"
	"slices"
	"sort"
	"unsafe"
)

// scope is a function (subprogram) or an inlined call in a unit. Children
// of a scope are the inlined calls directly inside it, linked through
// firstChild/nextSibling. A scope has its first address range inline and
// any further ranges in unitInfo.extra, so that the tens of thousands of
// scopes of a large unit cost no allocation each.
//
// Addresses are 32-bit offsets from the unit's base (unitInfo.base, the
// lowest start of the unit's code ranges), which halves the ranges:
// scopes are a large part of a binary's decoded tables. A range reaching
// outside [base, base+2³²-1) is clipped to it: only addresses in the
// unit's own ranges are ever looked up in it, and decoding fails for a
// unit whose ranges span more than that (a single compilation unit with
// 4 GiB of code between its ends).
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
	// below 0xffff (nearly every inlined call); otherwise callFC is
	// callWide and the pair is in unitInfo.wide.
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
func (s *scope) setCall(id int32, file, line, col uint32, wide *[]wideCall) {
	s.callLine = line
	if file < 0xffff && col < 0xffff {
		s.callFC = file<<16 | col
		return
	}
	s.callFC = callWide
	*wide = append(*wide, wideCall{id, file, col})
}

// span32 is an address range as offsets from a unit's base.
type span32 struct{ lo, hi uint32 }

// kidRun is where a scope with many children has their sorted ranges in
// unitInfo.kids and kidsHi.
type kidRun struct{ start, n int32 }

// rootRange is a range of a scope, as offsets from the unit's base.
type rootRange struct {
	lo, hi uint32
	scope  int32
}

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

// unitInfo is one decoded unit: its line table and its tree of functions
// and inlined calls, each slice at its exact size.
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
	// decoded: 4 bytes per file and unit instead of a string header,
	// as units share most of their files.
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

// lookupFrames appends the frames of addr in the unit to buf; ok is false
// when the unit has no line for addr.
func (ui *unitInfo) lookupFrames(b *Binary, addr uint64, buf []Frame) ([]Frame, bool) {
	row, ok := ui.lines.lookup(addr)
	if !ok || row.end() {
		return buf, false
	}
	var chain [32]int32
	n := ui.scopeChain(addr, &chain)
	file, line, col := ui.file(uint32(row.file)), int(row.line), int(row.col)
	if n == 0 {
		return append(buf, Frame{File: file, Line: line, Column: col}), true
	}
	for k := n - 1; k >= 0; k-- {
		name := ui.scopeName(b, chain[k], k == 0, addr)
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

// scopeChain fills chain with the scopes containing addr, outermost (the
// function) first, and returns how many. Scope ranges are offsets from
// ui.base, clipped to 32 bits: an address outside that window is in no
// scope of the unit.
func (ui *unitInfo) scopeChain(addr uint64, chain *[32]int32) int {
	if addr < ui.base || addr-ui.base >= 1<<32-1 {
		return 0
	}
	off := uint32(addr - ui.base)
	n := 0
	j := sort.Search(len(ui.roots), func(j int) bool { return ui.roots[j].lo > off }) - 1
	for ; j >= 0 && ui.rootHi[j] > off; j-- {
		if r := ui.roots[j]; off < r.hi {
			chain[0] = r.scope
			n = 1
			break
		}
	}
	for n > 0 && n < len(chain) {
		next := ui.childAt(chain[n-1], off)
		if next < 0 {
			break
		}
		chain[n] = next
		n++
	}
	return n
}

// childAt returns the inlined call directly inside scope p that contains
// off, -1 for none.
func (ui *unitInfo) childAt(p int32, off uint32) int32 {
	if ps := &ui.scopes[p]; ps.firstChild <= -2 {
		run := ui.kidRuns[-2-ps.firstChild]
		kids := ui.kids[run.start : run.start+run.n]
		hi := ui.kidsHi[run.start : run.start+run.n]
		k := sort.Search(len(kids), func(k int) bool { return kids[k].lo > off }) - 1
		for ; k >= 0 && hi[k] > off; k-- {
			if off < kids[k].hi {
				return kids[k].scope
			}
		}
		return -1
	}
	for c := ui.scopes[p].firstChild; c >= 0; c = ui.scopes[c].nextSibling {
		if ui.contains(c, off) {
			return c
		}
	}
	return -1
}

// scopeName returns the name to print for scope i; outer says it is the
// function holding the code.
func (ui *unitInfo) scopeName(b *Binary, i int32, outer bool, addr uint64) string {
	s := &ui.scopes[i]
	name := ui.names[s.name&^nameLinkage]
	if !outer || ui.goUnit {
		return name
	}
	// When a symbol starts exactly where the function's range holding
	// addr does, name the function as perf does, by that symbol: of
	// several aliases at one address it is the one perf's
	// choose_best_symbol picks (clock_gettime@@GLIBC_2.17 where glibc's
	// DWARF gives the hidden alias __GI___clock_gettime as linkage
	// name). Where the DWARF has only a source name (C functions, C++
	// functions in an anonymous namespace) the symbol is also the real
	// linkage name of that part (foo.constprop.0, _ZN12_GLOBAL__N_1...,
	// and for the cold part of a hot/cold split, foo.cold). binutils does
	// this for the first range only, and caches the answer per
	// function, so that addr2line names a cold part foo or foo.cold
	// depending on which address it was asked first
	// (_bfd_dwarf2_find_nearest_line, bfd/dwarf2.c); llvm-symbolizer
	// names every part after its symbol, and perf report names code by
	// symbol only.
	off := uint32(addr - ui.base) // addr is in the scope: scopeChain checked the window
	if sym, ok := b.lookupSym(addr); ok && sym.start == ui.base+uint64(ui.rangeStart(i, off)) {
		return sym.name
	}
	return name
}

func (ui *unitInfo) file(i uint32) string {
	if int(i) < len(ui.files) {
		return ui.fileTab[ui.files[i]]
	}
	return ""
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

// unitBuild holds a unit's tables while decodeUnit builds them.
type unitBuild struct {
	lines   lineEncoder
	extra   []span32
	kids    []rootRange
	kidsHi  []uint32
	kidRuns []kidRun
	scopes  []scope
	roots   []rootRange
	rootHi  []uint32
	wide    []wideCall
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
	scopes := b.scopes
	for i := range scopes {
		p := &scopes[i]
		n := 0
		for c := p.firstChild; c >= 0 && n <= manyKids; c = scopes[c].nextSibling {
			n++
		}
		if n <= manyKids {
			continue
		}
		start := len(b.kids)
		for c := p.firstChild; c >= 0; c = scopes[c].nextSibling {
			cs := &scopes[c]
			b.kids = append(b.kids, rootRange{cs.lo, cs.hi, c})
			for _, r := range extraOf(scopes, b.extra, c) {
				b.kids = append(b.kids, rootRange{r.lo, r.hi, c})
			}
		}
		if len(b.kids) > 1<<31-1 || len(b.kidRuns) > 1<<31-2 {
			return errors.New("more than 2^31 inlined call ranges in one unit")
		}
		run := b.kids[start:]
		sort.Slice(run, func(a, b int) bool { return run[a].lo < run[b].lo })
		b.kidsHi = addMaxHi(b.kidsHi, run)
		p.firstChild = -2 - int32(len(b.kidRuns))
		b.kidRuns = append(b.kidRuns, kidRun{int32(start), int32(len(run))})
	}
	return nil
}

// addMaxHi appends to out the running maximum of rs[i].hi, which lets a
// search by lo stop at the first range that cannot reach an address (as
// symTable.maxEnd does for symbols).
func addMaxHi(out []uint32, rs []rootRange) []uint32 {
	out = slices.Grow(out, len(rs))
	var m uint32
	for _, r := range rs {
		m = max(m, r.hi)
		out = append(out, m)
	}
	return out
}

// finish sorts the function ranges, indexes them and copies the tables
// into ui at their exact size: a decoded unit stays for the life of the
// Binary, and growth by doubling leaves up to half of each slice unused.
func (b *unitBuild) finish(ui *unitInfo) {
	sort.Slice(b.roots, func(i, j int) bool { return b.roots[i].lo < b.roots[j].lo })
	b.rootHi = addMaxHi(b.rootHi, b.roots)
	ui.lines = b.lines.table()
	ui.extra, ui.kids, ui.kidsHi, ui.kidRuns = slices.Clone(b.extra), slices.Clone(b.kids), slices.Clone(b.kidsHi), slices.Clone(b.kidRuns)
	ui.scopes, ui.roots, ui.rootHi, ui.wide = slices.Clone(b.scopes), slices.Clone(b.roots), slices.Clone(b.rootHi), slices.Clone(b.wide)
	ui.files, ui.names = slices.Clone(ui.files), slices.Clone(ui.names)
}

// holdsLocalFuncs reports whether a DIE of this tag, inside a function,
// may hold the definitions of a local class's member functions (see walk).
func holdsLocalFuncs(tag dwarf.Tag) bool {
	return tag == dwarf.TagStructType || tag == dwarf.TagClassType || tag == dwarf.TagUnionType
}

// skipsChildren reports whether the DIEs below a DIE of this tag are of no
// interest to a decode: nothing below them holds code ranges or inlined
// calls.
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
