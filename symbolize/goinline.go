package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// goInline decodes the inline tree that debug/gosym does not expose, from
// the Go 1.20+ pclntab layout (runtime/symtab.go, runtime/symtabinl.go):
// each function's _func record lists pcdata tables, of which
// _PCDATA_InlTreeIndex maps a pc to an index in the function's inline tree,
// found through _FUNCDATA_InlTree as an offset from moduledata.gofunc. An
// inlinedCall gives the inlined function's name and the pc of its call site
// in the outer function, whose own position (and inline index) comes from
// the same tables. All reads are bounds checked; any inconsistency makes
// frames report !ok and the caller fall back to debug/gosym's single frame.
type goInline struct {
	pcln   []byte // .gopclntab
	big    bool   // the byte order is big-endian (get32 calls it directly: through the interface, it was a tenth of a batch)
	ptr    int    // pointer size
	minLC  uint64
	text   uint64 // pcHeader.textStart
	nfunc  int
	fnName []byte // funcnametab
	cutab  []byte
	files  []byte // filetab
	pctab  []byte
	ftab   []byte // functab followed by the _func records (pclntable)

	gofunc     uint64 // address of go:func.*
	gofuncData []byte // bytes of the section holding it, from gofunc on

	// tables caches decoded pc-value tables, three per function (file,
	// line, inline index), so that each table is decoded once however
	// many addresses fall in the function; cached bounds their total
	// size (maxGoTableCache), beyond which tables are scanned each time.
	// A table is decoded at its second use: the first scans it up to the
	// pc only (and marks the slot usedOnce), which is half the work of a
	// whole decode on average, and most functions of a large binary are
	// looked up once or never. Without a cache (nil) every lookup scans:
	// where DWARF answers, this decoder only names what DWARF does not
	// cover (the padding after Go functions, which never runs), and a
	// slot per table was 0.47 MB of heap for the Go compiler.
	tables []atomic.Pointer[[]pcRun]
	cached atomic.Int64

	// mapped is set when the tables are a mapping of the file (see
	// region): names handed out must then be copies, made once per
	// distinct string and kept in strs (keyed by the string's first
	// byte in the mapping).
	mapped bool
	strMu  sync.RWMutex
	strs   map[*byte]string
	arena  strArena // the copies in strs (under strMu)
}

// pcRun is one run of a decoded pc-value table: val holds for pc offsets
// (from the function entry) below end.
type pcRun struct {
	end uint32
	val int32
}

// maxGoTableCache bounds the memory of decoded pc-value tables.
const maxGoTableCache = 32 << 20

// usedOnce marks a table slot whose table was scanned once, not decoded.
var usedOnce = new([]pcRun)

const (
	tabFile = iota
	tabLine
	tabInl
)

const (
	goPCDataInlTreeIndex = 2
	goFuncDataInlTree    = 3
	goInlinedCallSize    = 16
	goFuncHeaderSize     = 44 // _func up to and including nfuncdata
)

// newGoInline parses the pcHeader of a Go 1.20+ pclntab (magic 0xfffffff1)
// and locates go:func.*; it returns nil when either is not possible.
//
// sectionData reads a section (the one holding go:func.*); mapped says
// whether pcln and what sectionData returns are file mappings.
func newGoInline(ef *elf.File, pcln []byte, sectionData func(*elf.Section) ([]byte, error), mapped, cache bool) *goInline {
	if len(pcln) < 8 {
		return nil
	}
	bo := ef.ByteOrder
	if bo.Uint32(pcln) != 0xfffffff1 || pcln[4] != 0 || pcln[5] != 0 {
		return nil
	}
	g := &goInline{pcln: pcln, big: bo == binary.BigEndian, minLC: uint64(pcln[6]), ptr: int(pcln[7]), mapped: mapped}
	if g.ptr != 4 && g.ptr != 8 || g.minLC == 0 {
		return nil
	}
	word := func(i int) (uint64, bool) {
		off := 8 + i*g.ptr
		if off+g.ptr > len(pcln) {
			return 0, false
		}
		if g.ptr == 8 {
			return bo.Uint64(pcln[off:]), true
		}
		return uint64(bo.Uint32(pcln[off:])), true
	}
	var w [8]uint64
	for i := range w {
		v, ok := word(i)
		if !ok {
			return nil
		}
		w[i] = v
	}
	nfunc, text := w[0], w[2]
	if text == 0 {
		// Recent linkers leave textStart to the runtime (it equals
		// moduledata.text, the start of .text), as debug/gosym assumes.
		if t := ef.Section(".text"); t != nil {
			text = t.Addr
		}
	}
	offs := []uint64{w[3], w[4], w[5], w[6], w[7]} // funcname, cu, filetab, pctab, pcln
	for _, o := range offs {
		if o > uint64(len(pcln)) {
			return nil
		}
	}
	if nfunc > uint64(len(pcln)) {
		return nil
	}
	g.nfunc, g.text = int(nfunc), text
	g.fnName = pcln[offs[0]:]
	g.cutab = pcln[offs[1]:]
	g.files = pcln[offs[2]:]
	g.pctab = pcln[offs[3]:]
	g.ftab = pcln[offs[4]:]
	if (g.nfunc+1)*8 > len(g.ftab) {
		return nil
	}
	g.gofunc = findGoFunc(ef, text)
	if g.gofunc == 0 {
		return nil
	}
	for _, s := range ef.Sections {
		// go:func.* is read-only data (in .gopclntab's neighbourhood).
		if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_WRITE != 0 ||
			!(s.Addr <= g.gofunc && g.gofunc < s.Addr+s.Size) {
			continue
		}
		d, err := sectionData(s)
		if err != nil || g.gofunc-s.Addr > uint64(len(d)) {
			return nil
		}
		g.gofuncData = d[g.gofunc-s.Addr:]
	}
	if g.gofuncData == nil {
		return nil
	}
	if cache {
		g.tables = make([]atomic.Pointer[[]pcRun], 3*g.nfunc)
	}
	return g
}

// symbolValue returns the value of the first symbol of ef's symbol table
// (.symtab) named one of names, as a search of ef.Symbols() would, without
// decoding every symbol with its name as a string (5.6 MB on the heap for
// the Go compiler's 60,000 symbols): both tables are read off the heap
// (tableBytes) and only the names compared.
func symbolValue(ef *elf.File, names ...string) (uint64, bool) {
	symtab := ef.SectionByType(elf.SHT_SYMTAB)
	if symtab == nil || symtab.Link == 0 || int(symtab.Link) >= len(ef.Sections) {
		return 0, false
	}
	size := elf.Sym64Size
	if ef.Class == elf.ELFCLASS32 {
		size = elf.Sym32Size
	}
	data, freeData, err := tableBytes(symtab)
	if err != nil {
		return 0, false
	}
	defer freeData()
	if len(data)%size != 0 {
		return 0, false
	}
	strs, freeStrs, err := tableBytes(ef.Sections[symtab.Link])
	if err != nil {
		return 0, false
	}
	defer freeStrs()
	bo := ef.ByteOrder
	for p := data[min(size, len(data)):]; len(p) >= size; p = p[size:] { // entry 0 is the null symbol
		if slices.Contains(names, stringAt(strs, bo.Uint32(p))) {
			if size == elf.Sym64Size {
				return bo.Uint64(p[8:]), true
			}
			return uint64(bo.Uint32(p[4:])), true
		}
	}
	return 0, false
}

// findGoFunc returns the address of go:func.*: from the symbol table when
// there is one, else from runtime.firstmoduledata, found as the word in the
// data sections that points at .gopclntab (moduledata's first field) and
// checked by its text field. The field index is that of Go 1.20 to 1.26
// (after covctrs/ecovctrs). Position-independent binaries keep these
// pointers in relocations, not in the file: goFuncFromRelocs reads them
// there.
func findGoFunc(ef *elf.File, text uint64) uint64 {
	if v, ok := symbolValue(ef, "go:func.*", "go.func.*"); ok {
		return v
	}
	pcln := ef.Section(".gopclntab")
	if pcln == nil || ef.Class != elf.ELFCLASS64 {
		return 0
	}
	const (
		wordText   = 22
		wordRodata = 39
		wordGofunc = 40
	)
	for _, s := range ef.Sections {
		// moduledata is written by the linker into a writable data
		// section (.go.module in Go 1.26, .noptrdata before).
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_WRITE == 0 || s.Flags&elf.SHF_ALLOC == 0 || s.Size > 256<<20 {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		for off := 0; off+8*(wordGofunc+1) <= len(d); off += 8 {
			if ef.ByteOrder.Uint64(d[off:]) != pcln.Addr {
				continue
			}
			w := func(i int) uint64 { return ef.ByteOrder.Uint64(d[off+8*i:]) }
			if w(wordText) != text {
				continue
			}
			gofunc := w(wordGofunc)
			if gofunc >= w(wordRodata) && gofunc != 0 {
				return gofunc
			}
		}
	}
	return goFuncFromRelocs(ef, pcln.Addr, text, wordText, wordRodata, wordGofunc)
}

// goFuncFromRelocs finds moduledata in a position-independent binary, whose
// pointer words are zero in the file and filled at load time from
// R_X86_64_RELATIVE relocations: the relocation whose addend is
// .gopclntab's address sits on moduledata's first word, and the addends of
// the relocations on its text and gofunc words give those fields.
func goFuncFromRelocs(ef *elf.File, pcln, text uint64, wordText, wordRodata, wordGofunc int) uint64 {
	if ef.Machine != elf.EM_X86_64 || ef.Type != elf.ET_DYN {
		return 0
	}
	s := ef.Section(".rela.dyn")
	if s == nil || s.Type != elf.SHT_RELA || s.Size > 256<<20 {
		return 0
	}
	d, err := s.Data()
	if err != nil {
		return 0
	}
	addend := make(map[uint64]uint64)
	var starts []uint64
	for i := 0; i+24 <= len(d); i += 24 {
		off := ef.ByteOrder.Uint64(d[i:])
		if elf.R_X86_64(ef.ByteOrder.Uint64(d[i+8:])&0xffffffff) != elf.R_X86_64_RELATIVE {
			continue
		}
		a := ef.ByteOrder.Uint64(d[i+16:])
		addend[off] = a
		if a == pcln {
			starts = append(starts, off)
		}
	}
	for _, md := range starts {
		if addend[md+8*uint64(wordText)] != text {
			continue
		}
		gofunc, ok := addend[md+8*uint64(wordGofunc)]
		if ok && gofunc >= addend[md+8*uint64(wordRodata)] && gofunc != 0 {
			return gofunc
		}
	}
	return 0
}

// findFunc returns the offset of the _func record for pc in g.ftab.
func (g *goInline) findFunc(pc uint64) (fn, idx int, entry uint64, ok bool) {
	if pc < g.text {
		return 0, 0, 0, false
	}
	off := pc - g.text
	// The table has nfunc+1 entries, the last one the end of text: the
	// function holding off is the first whose successor starts after it.
	// (sort.Search's closure cost a tenth of a batch's lookups.)
	i, hi := 0, g.nfunc
	for i < hi {
		m := int(uint(i+hi) >> 1)
		if uint64(g.get32(g.ftab[8*(m+1):])) > off {
			hi = m
		} else {
			i = m + 1
		}
	}
	if i >= g.nfunc {
		return 0, 0, 0, false
	}
	entryOff := uint64(g.get32(g.ftab[8*i:]))
	funcOff := int(g.get32(g.ftab[8*i+4:]))
	if funcOff+goFuncHeaderSize > len(g.ftab) || uint64(g.get32(g.ftab[funcOff:])) != entryOff {
		return 0, 0, 0, false
	}
	return funcOff, i, g.text + entryOff, true
}

// value is pcvalue through the cache of decoded tables of function idx.
func (g *goInline) value(idx, kind int, tab uint32, entry, pc uint64) (int32, bool) {
	if g.tables == nil {
		return g.pcvalue(tab, entry, pc)
	}
	slot := &g.tables[3*idx+kind]
	runs := slot.Load()
	if runs == nil || runs == usedOnce {
		if runs == nil && slot.CompareAndSwap(nil, usedOnce) || g.cached.Load() > maxGoTableCache {
			return g.pcvalue(tab, entry, pc)
		}
		r, ok := g.decodeTable(tab)
		if !ok {
			return g.pcvalue(tab, entry, pc)
		}
		g.cached.Add(int64(8 * len(r)))
		slot.Store(&r)
		runs = &r
	}
	off := pc - entry
	rs := *runs
	i, hi := 0, len(rs)
	for i < hi {
		m := int(uint(i+hi) >> 1)
		if uint64(rs[m].end) > off {
			hi = m
		} else {
			i = m + 1
		}
	}
	if i == len(rs) {
		return -1, false
	}
	return rs[i].val, true
}

// decodeTable decodes a whole pc-value table into runs.
func (g *goInline) decodeTable(tab uint32) ([]pcRun, bool) {
	if tab == 0 || int(tab) >= len(g.pctab) {
		return nil, false
	}
	p := g.pctab[tab:]
	val := int32(-1)
	var cur uint64
	// Runs go to a buffer on the stack first and are copied out once, at
	// their final length: growing the slice on the heap was a third of
	// the decode's time.
	var scratch [64]pcRun
	runs := scratch[:0]
	for first := true; ; first = false {
		uv, n := uvarint(p)
		if n <= 0 {
			return nil, false
		}
		p = p[n:]
		if uv == 0 && !first {
			return slices.Clone(runs), true
		}
		if uv&1 != 0 {
			val += int32(-((uv + 1) >> 1))
		} else {
			val += int32(uv >> 1)
		}
		d, n := uvarint(p)
		if n <= 0 {
			return nil, false
		}
		p = p[n:]
		cur += d * g.minLC
		if cur > 1<<32-1 || len(runs) > len(g.pctab) {
			return nil, false
		}
		runs = append(runs, pcRun{end: uint32(cur), val: val})
	}
}

func (g *goInline) u32(b []byte, off int) (uint32, bool) {
	if off < 0 || off+4 > len(b) {
		return 0, false
	}
	return g.get32(b[off:]), true
}

// get32 is the table's byte order's Uint32(b) with the byte order's code inlined.
func (g *goInline) get32(b []byte) uint32 {
	if g.big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

// pcvalue evaluates the pc-value table at pctab offset tab for pc, as
// runtime.pcvalue: a sequence of (zigzag value delta, pc delta) varints
// starting at value -1 and pc entry.
func (g *goInline) pcvalue(tab uint32, entry, pc uint64) (int32, bool) {
	if tab == 0 || int(tab) >= len(g.pctab) {
		return -1, false
	}
	p := g.pctab[tab:]
	val := int32(-1)
	cur := entry
	first := true
	for {
		uv, n := uvarint(p)
		if n <= 0 {
			return -1, false
		}
		p = p[n:]
		if uv == 0 && !first {
			return -1, false // end of table
		}
		first = false
		if uv&1 != 0 {
			val += int32(-((uv + 1) >> 1))
		} else {
			val += int32(uv >> 1)
		}
		d, n := uvarint(p)
		if n <= 0 {
			return -1, false
		}
		p = p[n:]
		cur += d * g.minLC
		if pc < cur {
			return val, true
		}
	}
}

// uvarint is binary.Uvarint with the one-byte case first: most deltas in
// pc-value tables fit in a byte (runtime.step does the same).
func uvarint(p []byte) (uint64, int) {
	if len(p) > 0 && p[0] < 0x80 {
		return uint64(p[0]), 1
	}
	return binary.Uvarint(p)
}

// cstring returns the NUL-terminated string at off in b. On the heap it is
// a view of b, without copying: section data is never modified once read,
// and a lookup must not allocate. From a mapping it is an interned copy,
// as the mapping goes away at Close while callers keep the string.
func (g *goInline) cstring(b []byte, off int32) string {
	if off < 0 || int(off) >= len(b) {
		return ""
	}
	s := b[off:]
	if g.mapped {
		// Interned already: no need to find its end again.
		g.strMu.RLock()
		c, ok := g.strs[&s[0]]
		g.strMu.RUnlock()
		if ok {
			return c
		}
	}
	i := bytes.IndexByte(s, 0)
	if i <= 0 {
		return ""
	}
	v := unsafe.String(&s[0], i)
	if !g.mapped {
		return v
	}
	g.strMu.Lock()
	defer g.strMu.Unlock()
	if c, ok := g.strs[&s[0]]; ok {
		return c
	}
	if g.strs == nil {
		g.strs = map[*byte]string{}
	}
	c := g.arena.clone(v)
	g.strs[&s[0]] = c
	return c
}

// position returns the file and line of pc in the function at fn.
func (g *goInline) position(fn, idx int, entry, pc uint64) (string, int, bool) {
	pcfile, ok1 := g.u32(g.ftab, fn+20)
	pcln, ok2 := g.u32(g.ftab, fn+24)
	cuOff, ok3 := g.u32(g.ftab, fn+32)
	if !ok1 || !ok2 || !ok3 {
		return "", 0, false
	}
	fno, ok := g.value(idx, tabFile, pcfile, entry, pc)
	if !ok || fno < 0 {
		return "", 0, false
	}
	line, ok := g.value(idx, tabLine, pcln, entry, pc)
	if !ok {
		return "", 0, false
	}
	foff, ok := g.u32(g.cutab, 4*int(cuOff+uint32(fno)))
	if !ok || foff == ^uint32(0) {
		return "", 0, false
	}
	return g.cstring(g.files, int32(foff)), int(line), true
}

// frames returns the inline chain at pc, leaf first, ending with the
// physical function; ok is false when pc has no inline tree entry or the
// tables are inconsistent.
func (g *goInline) frames(b *Binary, pc uint64, buf []Frame) ([]Frame, bool) {
	fn, fidx, entry, ok := g.findFunc(pc)
	if !ok {
		return buf, false
	}
	if fn+goFuncHeaderSize > len(g.ftab) {
		return buf, false
	}
	npcdata, _ := g.u32(g.ftab, fn+28)
	nfuncdata := int(g.ftab[fn+43])
	if npcdata > 1<<10 {
		return buf, false
	}
	// A function into which nothing was inlined has no inline tree: its
	// chain is the function alone (inlTab 0 below).
	var inlTab, treeOff uint32
	if npcdata > goPCDataInlTreeIndex && nfuncdata > goFuncDataInlTree {
		inlTab, _ = g.u32(g.ftab, fn+goFuncHeaderSize+4*goPCDataInlTreeIndex)
		var ok bool
		treeOff, ok = g.u32(g.ftab, fn+goFuncHeaderSize+4*int(npcdata)+4*goFuncDataInlTree)
		if !ok || treeOff == ^uint32(0) {
			inlTab = 0
		}
	}
	start := len(buf)
	for depth := 0; depth < 64; depth++ {
		file, line, ok := g.position(fn, fidx, entry, pc)
		if !ok {
			if depth == 0 {
				// Past the last pc of the tables: alignment padding
				// after the function's code, which has no source
				// position. Name the function, as pclntab's extent
				// includes the padding, and give no line.
				nameOff, _ := g.u32(g.ftab, fn+4)
				name := g.cstring(g.fnName, int32(nameOff))
				if name == "" {
					return buf[:start], false
				}
				return append(buf, Frame{Function: b.demangle(name), RawName: name}), true
			}
			return buf[:start], false
		}
		idx := int32(-1)
		if inlTab != 0 {
			if idx, ok = g.value(fidx, tabInl, inlTab, entry, pc); !ok {
				return buf[:start], false
			}
		}
		if idx < 0 {
			nameOff, _ := g.u32(g.ftab, fn+4)
			name := g.cstring(g.fnName, int32(nameOff))
			buf = append(buf, Frame{Function: b.demangle(name), RawName: name, File: file, Line: line})
			return buf, true
		}
		rec := int(treeOff) + goInlinedCallSize*int(idx)
		nameOff, ok1 := g.u32(g.gofuncData, rec+4)
		parentPC, ok2 := g.u32(g.gofuncData, rec+8)
		if !ok1 || !ok2 {
			return buf[:start], false
		}
		name := g.cstring(g.fnName, int32(nameOff))
		buf = append(buf, Frame{Function: b.demangle(name), RawName: name, File: file, Line: line, Inlined: true})
		pc = entry + uint64(int64(int32(parentPC)))
	}
	return buf[:start], false
}
