package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
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
//
// The tables are held in memory or read from the file (see pclnTab); the
// function table, the compilation unit table and the file name table,
// which every lookup reads, are always held.
type goInline struct {
	big     bool // the byte order is big-endian (get32 calls it directly: a lookup reads many words)
	ptr     int  // pointer size
	minLC   uint64
	text    uint64 // pcHeader.textStart
	nfunc   int
	functab []byte  // functab: (entry offset, _func offset) per function, and the end of text
	funcs   pclnTab // pclntable: functab followed by the _func records
	fnName  nameTab // funcnametab
	cutab   []byte
	files   []byte // filetab
	pctab   pclnTab

	gofunc     uint64  // address of go:func.*
	gofuncData pclnTab // the section holding it, from gofunc on

	// tables caches decoded pc-value tables, three per function (file,
	// line, inline index), so that each table is decoded once however
	// many addresses fall in the function; cached bounds their total
	// size (maxGoTableCache), beyond which tables are scanned each time.
	// A table is decoded at its second use: the first scans it up to the
	// pc only (and marks the slot usedOnce), which is half the work of a
	// whole decode on average, and most functions of a large binary are
	// looked up once or never. Without a cache (nil) every lookup scans:
	// where DWARF answers, this decoder only names what DWARF does not
	// cover, and a slot per table would cost more than it saves.
	tables []atomic.Pointer[[]pcRun]
	cached atomic.Int64

	// fileMu serializes the lookups that read the tables from the file
	// (a few percent of a batch, see pclnTab) and guards scratch, the
	// buffers they read into: buffers on the stack would move to the
	// heap (the race detector's instrumentation of a read lets them
	// escape), and a lookup must not allocate. Lookups in held tables
	// take no lock and use no buffer.
	fileMu  sync.Mutex
	scratch *pclnScratch
}

// pclnScratch is where a lookup in tables read from the file reads them.
type pclnScratch struct {
	rec  [goFuncReadSize]byte    // the _func record
	win  [256]byte               // a window of a pc-value table
	call [goInlinedCallSize]byte // an inlinedCall record
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
	goFuncReadSize       = 128
)

// newGoInline parses the pcHeader of a Go 1.20+ pclntab (magic 0xfffffff1)
// and locates go:func.*; it returns nil when either is not possible.
// With cache, decoded pc-value tables are kept (see tables). pcln and
// what gofunc returns are held when pcln is.
func newGoInline(ef *elf.File, pcln pclnTab, cache bool) *goInline {
	var hdr [8 + 8*8]byte
	h := pcln.window(0, hdr[:])
	if len(h) < 8 {
		return nil
	}
	bo := ef.ByteOrder
	if bo.Uint32(h) != 0xfffffff1 || h[4] != 0 || h[5] != 0 {
		return nil
	}
	g := &goInline{big: bo == binary.BigEndian, minLC: uint64(h[6]), ptr: int(h[7])}
	if g.ptr != 4 && g.ptr != 8 || g.minLC == 0 {
		return nil
	}
	w, ok := g.header(h, bo)
	if !ok {
		return nil
	}
	nfunc, text := w[0], w[2]
	if text == 0 {
		// Recent linkers leave textStart to the runtime (it equals
		// moduledata.text, the start of .text), as debug/gosym assumes.
		if t := ef.Section(".text"); t != nil {
			text = t.Addr
		}
	}
	if !g.setTables(pcln, nfunc, w[3:8]) {
		return nil
	}
	g.text = text
	if g.gofunc = findGoFunc(ef, text); g.gofunc == 0 {
		return nil
	}
	if g.gofuncData, ok = goFuncData(ef, g.gofunc, pcln.f); !ok {
		return nil
	}
	if cache {
		g.tables = make([]atomic.Pointer[[]pcRun], 3*g.nfunc)
	}
	if !pcln.held() {
		g.scratch = new(pclnScratch)
	}
	return g
}

// header returns the eight words of the pcHeader after its first 8 bytes.
func (g *goInline) header(h []byte, bo binary.ByteOrder) (w [8]uint64, ok bool) {
	for i := range w {
		off := 8 + i*g.ptr
		if off+g.ptr > len(h) {
			return w, false
		}
		if g.ptr == 8 {
			w[i] = bo.Uint64(h[off:])
		} else {
			w[i] = uint64(bo.Uint32(h[off:]))
		}
	}
	return w, true
}

// setTables sets the tables from their offsets in pcln (funcnametab, cutab,
// filetab, pctab, pclntable), holding functab, cutab and filetab.
func (g *goInline) setTables(pcln pclnTab, nfunc uint64, offs []uint64) bool {
	for _, o := range offs {
		if o > uint64(pcln.size) {
			return false
		}
	}
	if nfunc > uint64(pcln.size) {
		return false
	}
	g.nfunc = int(nfunc)
	g.fnName.pclnTab = pcln.from(offs[0])
	g.pctab = pcln.from(offs[3])
	g.funcs = pcln.from(offs[4])
	var ok bool
	if g.functab, ok = g.funcs.load(0, (g.nfunc+1)*8); !ok {
		return false
	}
	// cutab and filetab are small: held, up to the next table.
	if g.cutab, ok = heldTable(pcln, offs, 1); !ok {
		return false
	}
	g.files, ok = heldTable(pcln, offs, 2)
	return ok
}

// heldTable loads table i of offs: up to the table that follows it in
// pcln, or to its end.
func heldTable(pcln pclnTab, offs []uint64, i int) ([]byte, bool) {
	end := uint64(pcln.size)
	for _, o := range offs {
		if o > offs[i] && o < end {
			end = o
		}
	}
	if pcln.held() {
		return pcln.mem[offs[i]:], true // a slice to the end costs nothing
	}
	return pcln.load(int(offs[i]), int(end-offs[i]))
}

// goFuncData returns the bytes of the section holding go:func.* from
// gofunc on (the inline trees are go:func.*, at the end of the read-only
// data): held, or read from f when f is not nil.
func goFuncData(ef *elf.File, gofunc uint64, f *os.File) (pclnTab, bool) {
	var t pclnTab
	found := false
	for _, s := range ef.Sections {
		// go:func.* is read-only data (in .gopclntab's neighbourhood).
		if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_WRITE != 0 ||
			!(s.Addr <= gofunc && gofunc < s.Addr+s.Size) {
			continue
		}
		if s.Flags&elf.SHF_COMPRESSED != 0 || s.FileSize != s.Size {
			return t, false
		}
		off, n := gofunc-s.Addr, s.Size-(gofunc-s.Addr)
		if f != nil {
			t = pclnTab{f: f, off: int64(s.Offset + off), size: int(n)}
		} else {
			// The size is the section header's: trusted only
			// as far as the file backs it.
			d, err := readSized(io.NewSectionReader(s, int64(off), int64(n)), n, readChunk)
			if err != nil {
				return t, false
			}
			t = memTab(d)
		}
		found = true
	}
	return t, found
}

// findFunc returns the _func record for pc (from the held table, or read
// into buf), its index in functab and the function's entry.
func (g *goInline) findFunc(pc uint64, buf []byte) (rec []byte, idx int, entry uint64, ok bool) {
	if pc < g.text {
		return nil, 0, 0, false
	}
	off := pc - g.text
	// The table has nfunc+1 entries, the last one the end of text: the
	// function holding off is the first whose successor starts after it.
	// (sort.Search's closure would cost a share of each lookup.)
	i, hi := 0, g.nfunc
	for i < hi {
		m := int(uint(i+hi) >> 1)
		if uint64(g.get32(g.functab[8*(m+1):])) > off {
			hi = m
		} else {
			i = m + 1
		}
	}
	if i >= g.nfunc {
		return nil, 0, 0, false
	}
	entryOff := uint64(g.get32(g.functab[8*i:]))
	funcOff := int(g.get32(g.functab[8*i+4:]))
	rec = g.funcs.window(funcOff, buf)
	if len(rec) < goFuncHeaderSize || uint64(g.get32(rec)) != entryOff {
		return nil, 0, 0, false
	}
	if !g.funcs.held() {
		// The record's pcdata and funcdata offsets follow its header.
		need := goFuncHeaderSize + 4*(int(g.get32(rec[28:]))+int(rec[43]))
		if need > len(rec) && need <= goFuncHeaderSize+4*(1<<10+255) {
			if rec, ok = g.funcs.load(funcOff, need); !ok {
				return nil, 0, 0, false
			}
		}
	}
	return rec, i, g.text + entryOff, true
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
	if tab == 0 || int(tab) >= g.pctab.size {
		return nil, false
	}
	s := g.stream(tab)
	val := int32(-1)
	var cur uint64
	// Runs go to a buffer on the stack first and are copied out once, at
	// their final length: growing the slice on the heap would be a large
	// part of the decode's time.
	var scratch [64]pcRun
	runs := scratch[:0]
	for first := true; ; first = false {
		uv, ok := s.uvarint()
		if !ok {
			return nil, false
		}
		if uv == 0 && !first {
			return slices.Clone(runs), true
		}
		val += zigzag(uv)
		d, ok := s.uvarint()
		if !ok {
			return nil, false
		}
		cur += d * g.minLC
		if cur > 1<<32-1 || len(runs) > g.pctab.size {
			return nil, false
		}
		runs = append(runs, pcRun{end: uint32(cur), val: val})
	}
}

// stream returns a reader of the pc-value table at pctab offset tab
// (g.fileMu held when the table is read from the file).
func (g *goInline) stream(tab uint32) pcStream {
	var buf []byte
	if g.scratch != nil {
		buf = g.scratch.win[:]
	}
	return pcStream{t: &g.pctab, off: int(tab), p: g.pctab.window(int(tab), buf), buf: buf}
}

// zigzag decodes a pc-value table's value delta.
func zigzag(uv uint64) int32 {
	if uv&1 != 0 {
		return int32(-((uv + 1) >> 1))
	}
	return int32(uv >> 1)
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
	if tab == 0 || int(tab) >= g.pctab.size {
		return -1, false
	}
	s := g.stream(tab)
	val := int32(-1)
	cur := entry
	for first := true; ; first = false {
		uv, ok := s.uvarint()
		if !ok {
			return -1, false
		}
		if uv == 0 && !first {
			return -1, false // end of table
		}
		val += zigzag(uv)
		d, ok := s.uvarint()
		if !ok {
			return -1, false
		}
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

// position returns the file and line of pc in the function whose _func
// record is rec.
func (g *goInline) position(rec []byte, idx int, entry, pc uint64) (string, int, bool) {
	pcfile, ok1 := g.u32(rec, 20)
	pcln, ok2 := g.u32(rec, 24)
	cuOff, ok3 := g.u32(rec, 32)
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
	return cstring(g.files, int32(foff)), int(line), true
}

// inlineTree returns where the function of rec finds the inline index of
// a pc (its pcdata table) and its inline tree (an offset in go:func.*);
// inlTab is 0 for a function into which nothing was inlined.
func (g *goInline) inlineTree(rec []byte) (inlTab, treeOff uint32) {
	npcdata, _ := g.u32(rec, 28)
	nfuncdata := int(rec[43])
	if npcdata > goPCDataInlTreeIndex && nfuncdata > goFuncDataInlTree {
		inlTab, _ = g.u32(rec, goFuncHeaderSize+4*goPCDataInlTreeIndex)
		var ok bool
		treeOff, ok = g.u32(rec, goFuncHeaderSize+4*int(npcdata)+4*goFuncDataInlTree)
		if !ok || treeOff == ^uint32(0) {
			inlTab = 0
		}
	}
	return inlTab, treeOff
}

// frames returns the inline chain at pc, leaf first, ending with the
// physical function; ok is false when pc has no inline tree entry or the
// tables are inconsistent.
func (g *goInline) frames(b *Binary, pc uint64, buf []Frame) ([]Frame, bool) {
	var rbuf []byte
	if g.scratch != nil {
		g.fileMu.Lock()
		defer g.fileMu.Unlock()
		rbuf = g.scratch.rec[:]
	}
	rec, fidx, entry, ok := g.findFunc(pc, rbuf)
	if !ok {
		return buf, false
	}
	if npcdata, _ := g.u32(rec, 28); npcdata > 1<<10 {
		return buf, false
	}
	inlTab, treeOff := g.inlineTree(rec)
	start := len(buf)
	for depth := 0; depth < 64; depth++ {
		file, line, ok := g.position(rec, fidx, entry, pc)
		if !ok {
			if depth == 0 {
				// Past the last pc of the tables: alignment padding
				// after the function's code, which has no source
				// position. Name the function, as pclntab's extent
				// includes the padding, and give no line.
				name := g.funcName(rec)
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
			name := g.funcName(rec)
			return append(buf, Frame{Function: b.demangle(name), RawName: name, File: file, Line: line}), true
		}
		nameOff, parentPC, ok := g.inlinedCall(treeOff, idx)
		if !ok {
			return buf[:start], false
		}
		name := g.fnName.at(int32(nameOff))
		buf = append(buf, Frame{Function: b.demangle(name), RawName: name, File: file, Line: line, Inlined: true})
		pc = entry + uint64(int64(int32(parentPC)))
	}
	return buf[:start], false
}

// funcName returns the name of the function of rec.
func (g *goInline) funcName(rec []byte) string {
	nameOff, _ := g.u32(rec, 4)
	return g.fnName.at(int32(nameOff))
}

// inlinedCall returns the name offset and the parent pc offset of entry
// idx of the inline tree at treeOff in go:func.*.
func (g *goInline) inlinedCall(treeOff uint32, idx int32) (nameOff, parentPC uint32, ok bool) {
	var cbuf []byte
	if g.scratch != nil {
		cbuf = g.scratch.call[:]
	}
	c := g.gofuncData.window(int(treeOff)+goInlinedCallSize*int(idx), cbuf)
	nameOff, ok1 := g.u32(c, 4)
	parentPC, ok2 := g.u32(c, 8)
	return nameOff, parentPC, ok1 && ok2
}
