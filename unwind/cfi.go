package unwind

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// This file reads the call-frame information of an x86-64 ELF file
// (.eh_frame, as the System V ABI and the LSB describe it) and computes,
// for an address, how to find the caller's frame: the rule set perf's
// unwinders (libunwind, libdw) apply to a --call-graph dwarf stack copy.

// ErrNoCFI means that a file's call-frame information could not be read,
// or has no rule this unwinder follows for an address.
var ErrNoCFI = errors.New("no usable call-frame information")

// x86-64 DWARF register numbers (System V ABI, figure 3.36).
const (
	dwRBP = 6
	dwRSP = 7
	dwRA  = 16 // the return address column
	dwNum = 17
)

// cie is the part of a Common Information Entry the unwinder needs.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	ptrEnc    byte
	zAug      bool   // augmentation "z...": FDEs carry augmentation data
	init      []byte // initial instructions
}

// fde is one Frame Description Entry: the code range it covers (ELF
// virtual addresses) and its instructions.
type fde struct {
	start, end uint64
	cie        *cie
	insns      []byte
}

// Table is the call-frame information of one x86-64 ELF file: its FDEs
// sorted by start address, and its executable segments to turn a file
// offset into the ELF address the FDEs use. It is immutable once made and
// safe for concurrent use.
type Table struct {
	fdes  []fde
	loads []load
}

// load is a PT_LOAD segment: its file offset, size in the file and
// virtual address.
type load struct{ off, filesz, vaddr uint64 }

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
			t.loads = append(t.loads, load{off: p.Off, filesz: p.Filesz, vaddr: p.Vaddr})
		}
	}
	if err := t.parse(data, sec.Addr); err != nil {
		return nil, fmt.Errorf(".eh_frame: %w", err)
	}
	return t, nil
}

// addr returns the ELF address of file offset off: the first executable
// segment that holds the offset gives vaddr - offset (as perf's
// map__rip_2objdump does for the mapping's load bias); false when none
// does.
func (t *Table) addr(off uint64) (uint64, bool) {
	for _, s := range t.loads {
		if off >= s.off && off < s.off+s.filesz {
			return off - s.off + s.vaddr, true
		}
	}
	return 0, false
}

// reader is a bounds-checked little-endian cursor with a sticky error.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%w: truncated at offset %d", ErrNoCFI, r.off)
	}
	r.off = len(r.b)
}

// take returns the next n bytes, or nil past the end (the sticky error
// set): the one bounds check behind every fixed-width read.
func (r *reader) take(n int) []byte {
	if r.off+n > len(r.b) {
		r.fail()
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
		r.fail()
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
	at := base + uint64(r.off)
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
		r.err = fmt.Errorf("%w: pointer encoding %#x", ErrNoCFI, enc)
		return 0, false
	}
	switch enc & 0x70 {
	case 0x00:
	case 0x10: // pcrel
		v += at
	default:
		// textrel, datarel, funcrel, aligned: not used by x86-64 .eh_frame.
		r.err = fmt.Errorf("%w: pointer application %#x", ErrNoCFI, enc&0x70)
		return 0, false
	}
	if enc&0x80 != 0 { // indirect: would need the file's data
		r.err = fmt.Errorf("%w: indirect pointer", ErrNoCFI)
		return 0, false
	}
	return v, true
}

// parse reads every CIE and FDE of an .eh_frame section at ELF address base.
func (t *Table) parse(data []byte, base uint64) error {
	cies := map[int]*cie{}
	off := 0
	for off+4 <= len(data) {
		r := &reader{b: data, off: off}
		length := uint64(r.u32())
		if length == 0 {
			break // terminator
		}
		hdr := 4
		if length == 0xffffffff {
			length = r.u64()
			hdr = 12
		}
		if r.err != nil || off+hdr+4 > len(data) || length < 4 || length > uint64(len(data)-off-hdr) {
			return fmt.Errorf("%w: entry at %d runs past the section", ErrNoCFI, off)
		}
		end := off + hdr + int(length)
		idPos := r.off
		id := r.u32()
		ent := &reader{b: data[:end], off: r.off}
		if id == 0 {
			c, err := parseCIE(ent)
			if err != nil {
				return err
			}
			cies[off] = c
		} else {
			cieOff := idPos - int(id)
			c := cies[cieOff]
			if c == nil {
				if cieOff < 0 || cieOff >= len(data) {
					return fmt.Errorf("%w: FDE at %d names no CIE", ErrNoCFI, off)
				}
				// A CIE after its FDE: parse it where it is.
				cr := &reader{b: data, off: cieOff}
				l := int(cr.u32())
				if l == 0 || l == -1 || cieOff+4+l > len(data) {
					return fmt.Errorf("%w: FDE at %d names a bad CIE", ErrNoCFI, off)
				}
				cr.b = data[:cieOff+4+l]
				if cr.u32() != 0 {
					return fmt.Errorf("%w: FDE at %d names no CIE", ErrNoCFI, off)
				}
				var err error
				if c, err = parseCIE(cr); err != nil {
					return err
				}
				cies[cieOff] = c
			}
			start, ok := ent.ptr(c.ptrEnc, base)
			size, _ := ent.ptr(c.ptrEnc&0x0f, base)
			if ent.err != nil || !ok {
				return ent.err
			}
			if c.zAug {
				// Skip the FDE's augmentation data (the LSDA pointer).
				n := ent.uleb()
				if uint64(len(ent.b)-ent.off) < n {
					return fmt.Errorf("%w: FDE at %d: augmentation past its end", ErrNoCFI, off)
				}
				ent.off += int(n)
			}
			if ent.err != nil {
				return ent.err
			}
			if size > 0 {
				t.fdes = append(t.fdes, fde{start: start, end: start + size, cie: c, insns: data[ent.off:end]})
			}
		}
		off = end
	}
	sort.Slice(t.fdes, func(i, j int) bool { return t.fdes[i].start < t.fdes[j].start })
	return nil
}

func parseCIE(r *reader) (*cie, error) {
	c := &cie{ptrEnc: 0}
	version := r.u8()
	aug := r.cstring()
	if version != 1 && version != 3 {
		return nil, fmt.Errorf("%w: CIE version %d", ErrNoCFI, version)
	}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		c.raReg = uint64(r.u8())
	} else {
		c.raReg = r.uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		n := r.uleb()
		augEnd := r.off + int(n)
		if n > uint64(len(r.b)-r.off) {
			return nil, fmt.Errorf("%w: CIE augmentation past its end", ErrNoCFI)
		}
		for _, a := range aug[1:] {
			switch a {
			case 'R':
				c.ptrEnc = r.u8()
			case 'P':
				enc := r.u8()
				r.ptr(enc&0x7f, 0) // the personality routine: not needed
				r.err = nil
			case 'L':
				r.u8()
			case 'S', 'B':
			default:
				r.off = augEnd
			}
		}
		r.off = augEnd
		c.zAug = true
	} else if aug != "" {
		return nil, fmt.Errorf("%w: CIE augmentation %q", ErrNoCFI, aug)
	}
	if r.err != nil {
		return nil, r.err
	}
	c.init = r.b[r.off:]
	return c, nil
}

// rule says where a register of the caller is: not saved (same value),
// saved at CFA+off, or undefined.
type rule struct {
	kind byte // 0 same value, 1 at CFA+off, 2 undefined, 3 CFA+off is the value
	off  int64
}

// row is the unwind rule set at one address.
type row struct {
	cfaReg uint64
	cfaOff int64
	regs   [dwNum]rule
}

// find returns the FDE covering ELF address a.
func (t *Table) find(a uint64) *fde {
	i := sort.Search(len(t.fdes), func(i int) bool { return t.fdes[i].end > a })
	if i < len(t.fdes) && t.fdes[i].start <= a {
		return &t.fdes[i]
	}
	return nil
}

// rowAt runs the CIE's initial instructions and the FDE's up to address a.
func (f *fde) rowAt(a uint64) (row, error) {
	var rw row
	init, err := run(f.cie, f.cie.init, &rw, nil, f.start, ^uint64(0))
	if err != nil {
		return rw, err
	}
	_, err = run(f.cie, f.insns, &rw, &init, f.start, a)
	return rw, err
}

// run executes call-frame instructions on rw until the location passes a.
// initial is the row after the CIE's instructions (for DW_CFA_restore).
func run(c *cie, insns []byte, rw *row, initial *row, loc, a uint64) (row, error) {
	r := &reader{b: insns}
	var stack []row
	reg := func(n uint64) (int, bool) { return int(n), n < dwNum }
	for r.off < len(r.b) && r.err == nil {
		op := r.u8()
		switch op >> 6 {
		case 1: // advance_loc
			loc += uint64(op&0x3f) * c.codeAlign
			if loc > a {
				return *rw, nil
			}
			continue
		case 2: // offset
			off := int64(r.uleb()) * c.dataAlign
			if i, ok := reg(uint64(op & 0x3f)); ok {
				rw.regs[i] = rule{kind: 1, off: off}
			}
			continue
		case 3: // restore
			if i, ok := reg(uint64(op & 0x3f)); ok && initial != nil {
				rw.regs[i] = initial.regs[i]
			}
			continue
		}
		switch op {
		case 0x00: // nop
		case 0x01: // set_loc
			v, _ := r.ptr(c.ptrEnc, 0)
			loc = v
		case 0x02, 0x03, 0x04: // advance_loc1/2/4
			var d uint64
			switch op {
			case 0x02:
				d = uint64(r.u8())
			case 0x03:
				d = uint64(r.u16())
			default:
				d = uint64(r.u32())
			}
			loc += d * c.codeAlign
			if loc > a {
				return *rw, nil
			}
		case 0x05: // offset_extended
			n, off := r.uleb(), int64(r.uleb())*c.dataAlign
			if i, ok := reg(n); ok {
				rw.regs[i] = rule{kind: 1, off: off}
			}
		case 0x06, 0x08: // restore_extended, same_value
			n := r.uleb()
			if i, ok := reg(n); ok {
				rw.regs[i] = rule{}
				if op == 0x06 && initial != nil {
					rw.regs[i] = initial.regs[i]
				}
			}
		case 0x07: // undefined
			if i, ok := reg(r.uleb()); ok {
				rw.regs[i] = rule{kind: 2}
			}
		case 0x09: // register: the caller's value is in another register
			n := r.uleb()
			r.uleb()
			if i, ok := reg(n); ok {
				rw.regs[i] = rule{kind: 2} // not followed: treated as unknown
			}
		case 0x0a: // remember_state
			if len(stack) > 64 {
				return *rw, fmt.Errorf("%w: state stack too deep", ErrNoCFI)
			}
			stack = append(stack, *rw)
		case 0x0b: // restore_state
			if len(stack) == 0 {
				return *rw, fmt.Errorf("%w: restore_state without remember_state", ErrNoCFI)
			}
			// The whole row, CFA rule included, as libgcc's
			// execute_cfa_program restores it.
			*rw = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		case 0x0c: // def_cfa
			rw.cfaReg, rw.cfaOff = r.uleb(), int64(r.uleb())
		case 0x0d: // def_cfa_register
			rw.cfaReg = r.uleb()
		case 0x0e: // def_cfa_offset
			rw.cfaOff = int64(r.uleb())
		case 0x0f: // def_cfa_expression: PLT stubs; not evaluated
			return *rw, fmt.Errorf("%w: CFA expression", ErrNoCFI)
		case 0x10, 0x16: // expression, val_expression
			n := r.uleb()
			l := r.uleb()
			if l > uint64(len(r.b)-r.off) {
				r.fail()
				break
			}
			r.off += int(l)
			if i, ok := reg(n); ok {
				rw.regs[i] = rule{kind: 2}
			}
		case 0x11: // offset_extended_sf
			n, off := r.uleb(), r.sleb()*c.dataAlign
			if i, ok := reg(n); ok {
				rw.regs[i] = rule{kind: 1, off: off}
			}
		case 0x12: // def_cfa_sf
			rw.cfaReg, rw.cfaOff = r.uleb(), r.sleb()*c.dataAlign
		case 0x13: // def_cfa_offset_sf
			rw.cfaOff = r.sleb() * c.dataAlign
		case 0x14: // val_offset
			n, off := r.uleb(), int64(r.uleb())*c.dataAlign
			if i, ok := reg(n); ok {
				rw.regs[i] = rule{kind: 3, off: off}
			}
		case 0x15: // val_offset_sf
			n, off := r.uleb(), r.sleb()*c.dataAlign
			if i, ok := reg(n); ok {
				rw.regs[i] = rule{kind: 3, off: off}
			}
		case 0x2e: // GNU_args_size
			r.uleb()
		case 0x2f: // GNU_negative_offset_extended
			n, off := r.uleb(), -int64(r.uleb())*c.dataAlign
			if i, ok := reg(n); ok {
				rw.regs[i] = rule{kind: 1, off: off}
			}
		default:
			return *rw, fmt.Errorf("%w: call-frame instruction %#x", ErrNoCFI, op)
		}
	}
	return *rw, r.err
}
