package unwind

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/perfcheck/perfcheck/internal/elfload"
)

// This file reads the call-frame information of an x86-64 ELF file
// (.eh_frame, as the System V ABI and the LSB describe it) and computes,
// for an address, how to find the caller's frame: the rule set perf's
// unwinders (libunwind, libdw) apply to a --call-graph dwarf stack copy.

// ErrNoCFI means that a file's call-frame information could not be read,
// or has no rule this unwinder follows for an address.
var ErrNoCFI = errors.New("no usable call-frame information")

// The causes of a *FormatError. Each wraps ErrNoCFI; they are values made
// once, so that the rule machine, which fails on some frame of many
// walks, reports a failure without allocating (step drops it, and only a
// caller that reports one formats it, with fde.errorf).
var (
	errTruncated    = fmt.Errorf("%w: %w", ErrNoCFI, io.ErrUnexpectedEOF)
	errPtrEncoding  = fmt.Errorf("%w: unknown pointer encoding", ErrNoCFI)
	errPtrApply     = fmt.Errorf("%w: pointer application not used on x86-64", ErrNoCFI)
	errIndirect     = fmt.Errorf("%w: indirect pointer", ErrNoCFI)
	errStateDepth   = fmt.Errorf("%w: remember_state nested deeper than %d", ErrNoCFI, maxRemember)
	errRestoreState = fmt.Errorf("%w: restore_state without remember_state", ErrNoCFI)
	errOpcode       = fmt.Errorf("%w: unknown call-frame instruction", ErrNoCFI)
)

// FormatError reports malformed or unsupported call-frame information:
// where (an absolute offset in the ELF file), in which entry, and why.
type FormatError struct {
	Offset int64  // absolute file offset of the problem
	Msg    string // the entry it is in and what is wrong, without the offset
	Err    error  // the cause: wraps ErrNoCFI, and io.ErrUnexpectedEOF for truncation
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("offset %#x: %s: %v", e.Offset, e.Msg, e.Err)
}

func (e *FormatError) Unwrap() error { return e.Err }

// x86-64 DWARF register numbers (System V ABI, figure 3.36).
const (
	dwRSP = 7
	// dwRA is rip: the pc of a frame. x86-64 CIEs name it as their
	// return address column too, but step follows the column the CIE
	// names (cie.raReg) and moves that value here.
	dwRA  = 16
	dwNum = 17
)

// cie is the part of a Common Information Entry the unwinder needs.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64 // the column that holds the return address
	ptrEnc    byte
	zAug      bool   // augmentation "z...": FDEs carry augmentation data
	init      []byte // initial instructions
	initOff   int64  // absolute file offset of init
}

// fde is one Frame Description Entry: the code range it covers (ELF
// virtual addresses) and its instructions.
type fde struct {
	start, end uint64
	cie        *cie
	insns      []byte
	off        int64 // absolute file offset of the entry
	insnsOff   int64 // absolute file offset of insns
}

// Table is the call-frame information of one x86-64 ELF file: its FDEs
// sorted by start address, and its executable segments to turn a file
// offset into the ELF address the FDEs use. It is immutable once made and
// safe for concurrent use.
type Table struct {
	fdes  []fde
	loads []elfload.Segment // the executable ones: FDEs describe code
}

// maxEHFrame bounds the .eh_frame read into memory.
const maxEHFrame = 64 << 20

// newTable reads the .eh_frame section of ef, which must be an x86-64 ELF
// file. debug/elf may panic on malformed input; newTable does not recover,
// so that ReadTable's one wrapper around its use of the file does.
func newTable(ef *elf.File) (*Table, error) {
	if ef.Machine != elf.EM_X86_64 || ef.Class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("%w: only x86-64 is unwound", ErrNoCFI)
	}
	sec := ef.Section(".eh_frame")
	if sec == nil || sec.Type == elf.SHT_NOBITS || sec.Size == 0 || sec.Size > maxEHFrame {
		return nil, fmt.Errorf("%w: no .eh_frame", ErrNoCFI)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf(".eh_frame: %w", err)
	}
	t := &Table{}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			t.loads = append(t.loads, elfload.Of(&p.ProgHeader))
		}
	}
	if err := t.parse(data, sec.Addr, int64(sec.Offset)); err != nil {
		return nil, fmt.Errorf(".eh_frame: %w", err)
	}
	return t, nil
}

// addr returns the ELF address of file offset off, in an executable
// segment; false when none holds it.
func (t *Table) addr(off uint64) (uint64, bool) { return elfload.Addr(t.loads, off) }

// reader is a bounds-checked little-endian cursor with a sticky error:
// the first failure is kept, with where it happened, and later reads
// return zero values.
type reader struct {
	b   []byte
	off int
	err error
	bad int // the offset of the read that failed
}

// fail records err (the first one only) and moves to the end.
func (r *reader) fail(err error) {
	if r.err == nil {
		r.err, r.bad = err, r.off
	}
	r.off = len(r.b)
}

// take returns the next n bytes, or nil past the end (the sticky error
// set): the one bounds check behind every fixed-width read.
func (r *reader) take(n int) []byte {
	if n > len(r.b)-r.off {
		r.fail(errTruncated)
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) u8() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	var shift uint
	var c byte
	for {
		c = r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			break
		}
	}
	if shift < 64 && c&0x40 != 0 {
		v |= -1 << shift
	}
	return v
}

func (r *reader) cstring() string {
	start := r.off
	for r.off < len(r.b) && r.b[r.off] != 0 {
		r.off++
	}
	if r.off >= len(r.b) {
		r.fail(errTruncated)
		return ""
	}
	s := string(r.b[start:r.off])
	r.off++
	return s
}

// ptr reads a pointer in DW_EH_PE encoding enc; base is the ELF address of
// the section's first byte, for pc-relative values.
func (r *reader) ptr(enc byte, base uint64) (uint64, bool) {
	if enc == 0xff { // DW_EH_PE_omit
		return 0, false
	}
	at, start := base+uint64(r.off), r.off
	var v uint64
	switch enc & 0x0f {
	case 0x00:
		v = r.u64()
	case 0x01:
		v = r.uleb()
	case 0x02:
		v = uint64(r.u16())
	case 0x03:
		v = uint64(r.u32())
	case 0x04:
		v = r.u64()
	case 0x09:
		v = uint64(r.sleb())
	case 0x0a:
		v = uint64(int64(int16(r.u16())))
	case 0x0b:
		v = uint64(int64(int32(r.u32())))
	case 0x0c:
		v = r.u64()
	default:
		r.off = start
		r.fail(errPtrEncoding)
		return 0, false
	}
	switch enc & 0x70 {
	case 0x00:
	case 0x10: // pcrel
		v += at
	default:
		// textrel, datarel, funcrel, aligned: not used by x86-64 .eh_frame.
		r.off = start
		r.fail(errPtrApply)
		return 0, false
	}
	if enc&0x80 != 0 { // indirect: would need the file's data
		r.off = start
		r.fail(errIndirect)
		return 0, false
	}
	return v, r.err == nil
}

// parser reads the entries of one .eh_frame section.
type parser struct {
	data    []byte
	base    uint64 // ELF address of data[0]
	fileOff int64  // file offset of data[0]
	cies    map[int]*cie
}

// errorf returns a *FormatError at section offset at.
func (p *parser) errorf(at int, err error, format string, args ...any) error {
	return &FormatError{Offset: p.fileOff + int64(at), Msg: fmt.Sprintf(format, args...), Err: err}
}

// readerError turns the sticky error of r, a reader over p.data or a
// prefix of it, into a *FormatError naming the entry at off.
func (p *parser) readerError(r *reader, what string, off int) error {
	return p.errorf(r.bad, r.err, "%s at %#x", what, p.fileOff+int64(off))
}

// entryAt reads the length of the entry at off: where its CIE id (or CIE
// pointer) is and where it ends; ok is false for the terminator, a zero
// length. In .eh_frame the id is 4 bytes after either form of length.
func (p *parser) entryAt(off int) (idPos, end int, ok bool, err error) {
	r := &reader{b: p.data, off: off}
	length := uint64(r.u32())
	if r.err == nil && length == 0 {
		return 0, 0, false, nil
	}
	if length == 0xffffffff {
		length = r.u64()
	}
	if r.err != nil || length < 4 || length > uint64(len(p.data)-r.off) {
		return 0, 0, false, p.errorf(off, errTruncated, "entry at %#x runs past the section", p.fileOff+int64(off))
	}
	return r.off, r.off + int(length), true, nil
}

// parse reads every CIE and FDE of an .eh_frame section at ELF address
// base and file offset fileOff.
func (t *Table) parse(data []byte, base uint64, fileOff int64) error {
	p := &parser{data: data, base: base, fileOff: fileOff, cies: map[int]*cie{}}
	for off := 0; off+4 <= len(data); {
		idPos, end, ok, err := p.entryAt(off)
		if err != nil {
			return err
		}
		if !ok {
			break // terminator
		}
		id := binary.LittleEndian.Uint32(data[idPos:])
		if id == 0 {
			if _, err := p.cieAt(off); err != nil {
				return err
			}
		} else if err := t.parseFDE(p, off, idPos, id, end); err != nil {
			return err
		}
		off = end
	}
	sort.Slice(t.fdes, func(i, j int) bool { return t.fdes[i].start < t.fdes[j].start })
	return nil
}

// parseFDE reads the FDE at off, whose CIE pointer id is at idPos, and
// adds it to t.
func (t *Table) parseFDE(p *parser, off, idPos int, id uint32, end int) error {
	at := p.fileOff + int64(off)
	cieOff := idPos - int(id)
	if cieOff < 0 {
		return p.errorf(idPos, ErrNoCFI, "FDE at %#x names no CIE", at)
	}
	c, err := p.cieAt(cieOff)
	if err != nil {
		return err
	}
	ent := &reader{b: p.data[:end], off: idPos + 4}
	start, ok := ent.ptr(c.ptrEnc, p.base)
	size, _ := ent.ptr(c.ptrEnc&0x0f, p.base)
	if ent.err != nil || !ok {
		if ent.err == nil {
			ent.fail(errPtrEncoding) // an omitted start address
		}
		return p.readerError(ent, "FDE", off)
	}
	if start+size < start {
		return p.errorf(idPos+4, ErrNoCFI, "FDE at %#x: its range [%#x, +%#x) wraps", at, start, size)
	}
	if c.zAug {
		// Skip the FDE's augmentation data (the LSDA pointer).
		n := ent.uleb()
		if ent.err == nil && uint64(len(ent.b)-ent.off) < n {
			ent.fail(errTruncated)
		}
		if ent.err != nil {
			return p.readerError(ent, "FDE augmentation", off)
		}
		ent.off += int(n)
	}
	if size > 0 {
		t.fdes = append(t.fdes, fde{start: start, end: start + size, cie: c, insns: p.data[ent.off:end],
			off: at, insnsOff: p.fileOff + int64(ent.off)})
	}
	return nil
}

// cieAt returns the CIE at off, reading it on first use: an FDE may name
// a CIE that comes after it.
func (p *parser) cieAt(off int) (*cie, error) {
	if c := p.cies[off]; c != nil {
		return c, nil
	}
	at := p.fileOff + int64(off)
	if off >= len(p.data) {
		return nil, p.errorf(off, ErrNoCFI, "CIE at %#x is past the section", at)
	}
	idPos, end, ok, err := p.entryAt(off)
	if err != nil {
		return nil, err
	}
	if !ok || binary.LittleEndian.Uint32(p.data[idPos:]) != 0 {
		return nil, p.errorf(off, ErrNoCFI, "no CIE at %#x", at)
	}
	c, err := p.parseCIE(&reader{b: p.data[:end], off: idPos + 4}, off)
	if err != nil {
		return nil, err
	}
	p.cies[off] = c
	return c, nil
}

// parseCIE reads the CIE at off from r, just past its id.
func (p *parser) parseCIE(r *reader, off int) (*cie, error) {
	c := &cie{}
	version := r.u8()
	aug := r.cstring()
	if r.err == nil && version != 1 && version != 3 {
		return nil, p.errorf(off, ErrNoCFI, "CIE at %#x: version %d", p.fileOff+int64(off), version)
	}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		c.raReg = uint64(r.u8())
	} else {
		c.raReg = r.uleb()
	}
	if r.err == nil && len(aug) > 0 && aug[0] == 'z' {
		c.zAug = true
		n := r.uleb()
		if r.err == nil && n > uint64(len(r.b)-r.off) {
			r.fail(errTruncated)
		}
		if r.err == nil {
			augEnd := r.off + int(n)
			// The augmentation data is read within its own length.
			ar := &reader{b: r.b[:augEnd], off: r.off}
			c.ptrEnc = readAugmentation(ar, aug[1:])
			if ar.err != nil {
				return nil, p.readerError(ar, "CIE augmentation", off)
			}
			r.off = augEnd
		}
	} else if r.err == nil && aug != "" {
		return nil, p.errorf(off, ErrNoCFI, "CIE at %#x: augmentation %q", p.fileOff+int64(off), aug)
	}
	if r.err != nil {
		return nil, p.readerError(r, "CIE", off)
	}
	c.init, c.initOff = r.b[r.off:], p.fileOff+int64(r.off)
	return c, nil
}

// readAugmentation reads the data of a "z" augmentation's letters from
// r, which ends where the data does, and returns the FDE pointer
// encoding ('R'). An unknown letter ends the reading, as libgcc's
// extract_cie_info does: the data's length lets the rest be skipped, and
// the letters after it cannot be read without knowing its size.
func readAugmentation(r *reader, letters string) (ptrEnc byte) {
	for _, a := range letters {
		switch a {
		case 'R':
			ptrEnc = r.u8()
		case 'P':
			// The personality routine is not needed, but its size is:
			// the format's, whatever the application.
			enc := r.u8()
			if enc != 0xff {
				r.ptr(enc&0x0f, 0)
			}
		case 'L':
			r.u8()
		case 'S', 'B':
		default:
			return ptrEnc
		}
	}
	return ptrEnc
}

// Rule kinds: where a register of the caller is.
const (
	ruleSame      = iota // not saved: the callee's value
	ruleOffset           // saved at CFA+off
	ruleUndefined        // unknown
	ruleValOffset        // CFA+off is the value
)

// rule says where a register of the caller is.
type rule struct {
	kind byte
	off  int64
}

// row is the unwind rule set at one address.
type row struct {
	cfaReg uint64
	cfaOff int64
	// cfaExpr, when isExpr, is a DW_CFA_def_cfa_expression's expression
	// (a slice of the table's instructions): the CFA is its value, and
	// cfaReg and cfaOff do not apply.
	cfaExpr []byte
	isExpr  bool
	regs    [dwNum]rule
}

// maxRemember bounds the nesting of remember_state: compilers nest it
// once or twice (around a function's epilogues).
const maxRemember = 16

// state is the scratch space of a walk, reused for each frame: the rows
// remember_state saves, and where the last failed run stopped.
type state struct {
	saved [maxRemember]row
	n     int
	at    int64 // absolute file offset of the instruction a run failed at
}

// find returns the FDE covering ELF address a.
func (t *Table) find(a uint64) *fde {
	i := sort.Search(len(t.fdes), func(i int) bool { return t.fdes[i].end > a })
	if i < len(t.fdes) && t.fdes[i].start <= a {
		return &t.fdes[i]
	}
	return nil
}

// rowAt runs the CIE's initial instructions and the FDE's up to address
// a. Its error is one of the package's sentinels, st.at where it
// happened: errorf makes the report.
func (f *fde) rowAt(a uint64, st *state) (row, error) {
	var rw row
	st.n = 0
	if err := run(f.cie, f.cie.init, f.cie.initOff, &rw, nil, f.start, ^uint64(0), st); err != nil {
		return rw, err
	}
	init := rw
	err := run(f.cie, f.insns, f.insnsOff, &rw, &init, f.start, a, st)
	return rw, err
}

// errorf reports err, an error of rowAt that stopped at st.at, naming the
// FDE.
func (f *fde) errorf(err error, st *state) error {
	return &FormatError{Offset: st.at, Msg: fmt.Sprintf("FDE at %#x for [%#x, %#x)", f.off, f.start, f.end), Err: err}
}

// run executes call-frame instructions, at file offset base, on rw until
// the location passes a. initial is the row after the CIE's instructions
// (for DW_CFA_restore).
func run(c *cie, insns []byte, base int64, rw *row, initial *row, loc, a uint64, st *state) error {
	r := reader{b: insns}
	for r.off < len(r.b) {
		at := r.off
		op := r.u8()
		past := false
		var err error
		switch op >> 6 {
		case 1: // advance_loc
			loc += uint64(op&0x3f) * c.codeAlign
			past = loc > a
		case 2: // offset
			rw.set(uint64(op&0x3f), rule{kind: ruleOffset, off: int64(r.uleb()) * c.dataAlign})
		case 3: // restore
			rw.restore(uint64(op&0x3f), initial)
		default:
			past, err = extended(op, &r, c, rw, initial, st, &loc, a)
		}
		if err == nil {
			err = r.err
		}
		if err != nil {
			st.at = base + int64(at)
			return err
		}
		if past {
			return nil
		}
	}
	return nil
}

// set gives register n the rule ru; registers this unwinder does not
// track are ignored.
func (rw *row) set(n uint64, ru rule) {
	if n < dwNum {
		rw.regs[n] = ru
	}
}

// restore gives register n its rule after the CIE's instructions.
func (rw *row) restore(n uint64, initial *row) {
	if n < dwNum && initial != nil {
		rw.regs[n] = initial.regs[n]
	}
}

// extended executes op, an instruction whose high two bits are zero, whose
// operands r holds; past is true when it moves the location beyond a.
func extended(op byte, r *reader, c *cie, rw *row, initial *row, st *state, loc *uint64, a uint64) (past bool, err error) {
	switch op {
	case 0x00: // nop
	case 0x01: // set_loc
		*loc, _ = r.ptr(c.ptrEnc, 0)
	case 0x02: // advance_loc1
		*loc += uint64(r.u8()) * c.codeAlign
		return *loc > a, nil
	case 0x03: // advance_loc2
		*loc += uint64(r.u16()) * c.codeAlign
		return *loc > a, nil
	case 0x04: // advance_loc4
		*loc += uint64(r.u32()) * c.codeAlign
		return *loc > a, nil
	case 0x05: // offset_extended
		n, off := r.uleb(), int64(r.uleb())*c.dataAlign
		rw.set(n, rule{kind: ruleOffset, off: off})
	case 0x06: // restore_extended
		n := r.uleb()
		rw.set(n, rule{})
		rw.restore(n, initial)
	case 0x07: // undefined
		rw.set(r.uleb(), rule{kind: ruleUndefined})
	case 0x08: // same_value
		rw.set(r.uleb(), rule{})
	case 0x09: // register: the caller's value is in another register
		n := r.uleb()
		r.uleb()
		rw.set(n, rule{kind: ruleUndefined}) // not followed: treated as unknown
	case 0x0a: // remember_state
		if st.n == len(st.saved) {
			return false, errStateDepth
		}
		st.saved[st.n] = *rw
		st.n++
	case 0x0b: // restore_state
		if st.n == 0 {
			return false, errRestoreState
		}
		// The whole row, CFA rule included, as libgcc's
		// execute_cfa_program restores it.
		st.n--
		*rw = st.saved[st.n]
	case 0x0c: // def_cfa
		rw.cfaReg, rw.cfaOff, rw.isExpr = r.uleb(), int64(r.uleb()), false
	case 0x0d: // def_cfa_register
		rw.cfaReg, rw.isExpr = r.uleb(), false
	case 0x0e: // def_cfa_offset
		rw.cfaOff = int64(r.uleb())
	case 0x0f: // def_cfa_expression: PLT stubs; evaluated by step
		rw.cfaExpr = r.take(int(min(r.uleb(), uint64(len(r.b)+1))))
		rw.isExpr = true
	case 0x10, 0x16: // expression, val_expression
		n := r.uleb()
		r.take(int(min(r.uleb(), uint64(len(r.b)+1))))
		rw.set(n, rule{kind: ruleUndefined})
	case 0x11: // offset_extended_sf
		n, off := r.uleb(), r.sleb()*c.dataAlign
		rw.set(n, rule{kind: ruleOffset, off: off})
	case 0x12: // def_cfa_sf
		rw.cfaReg, rw.cfaOff, rw.isExpr = r.uleb(), r.sleb()*c.dataAlign, false
	case 0x13: // def_cfa_offset_sf
		rw.cfaOff = r.sleb() * c.dataAlign
	case 0x14: // val_offset
		n, off := r.uleb(), int64(r.uleb())*c.dataAlign
		rw.set(n, rule{kind: ruleValOffset, off: off})
	case 0x15: // val_offset_sf
		n, off := r.uleb(), r.sleb()*c.dataAlign
		rw.set(n, rule{kind: ruleValOffset, off: off})
	case 0x2e: // GNU_args_size
		r.uleb()
	case 0x2f: // GNU_negative_offset_extended
		n, off := r.uleb(), -int64(r.uleb())*c.dataAlign
		rw.set(n, rule{kind: ruleOffset, off: off})
	default:
		return false, errOpcode
	}
	return false, nil
}
