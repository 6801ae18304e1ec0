package symbolize

import (
	"bytes"
	"debug/dwarf"
	"encoding/binary"
	"fmt"
	"sort"
	"unsafe"
)

// This file reads the DIEs of a unit for decodeUnit without debug/dwarf.
// debug/dwarf allocates an Entry, its Field slice and a boxed value per
// attribute for every DIE it reads, and copies every string: most of
// what decoding allocates, all of it garbage a moment later (bench/README.md
// compares the two readers). dieReader walks the unit's bytes driven by
// its abbreviation table, keeps only the attributes the tables need, in a
// die the caller reuses, and returns strings as views of the sections
// (the caller copies those it keeps). Forms and unit headers follow the
// DWARF 5 standard (sections 7.5.1 and 7.5.3 to 7.5.6) and are read the
// way debug/dwarf reads them (entry.go: buf.entry, formToClass; unit.go),
// so that every value is the one debug/dwarf would give: TestDIEReader
// compares the two on every DIE of real binaries. Entries read elsewhere
// (unit entries, DIEs other DIEs refer to, relocatable files, whose
// sections need relocating) still go through debug/dwarf and dieFromEntry.

// die holds the attributes of one DIE that decoding a unit needs. Strings
// may be views of section bytes, valid only until the unit's pages are
// dropped: they are copied before being kept (strings.Clone).
type die struct {
	off      dwarf.Offset
	tag      dwarf.Tag // 0 for a null entry (the end of a list of children)
	children bool
	own      bool // strings are debug/dwarf's copies (dieFromEntry), not views

	seen, has                   dieHas // attributes met; those met with a usable value
	name, linkage, mipsLinkage  string
	low, high                   uint64 // DW_AT_low_pc; DW_AT_high_pc when an address
	highOff                     int64  // DW_AT_high_pc when a constant (an offset from low)
	highConst                   bool   // DW_AT_high_pc is highOff, not high
	ranges                      dieVal // DW_AT_ranges as debug/dwarf types it
	origin, spec, sibling       dwarf.Offset
	callFile, callLine, callCol int64
}

// dieHas is a set of the attributes die keeps. An attribute met twice
// counts once, with its first value, as Entry.Val returns the first; a
// value of another type than debug/dwarf's callers assert reads as absent.
type dieHas uint16

const (
	hasName        dieHas = 1 << iota // DW_AT_name, a string
	hasLinkage                        // DW_AT_linkage_name, a string
	hasMIPSLinkage                    // DW_AT_MIPS_linkage_name, a string
	hasLow                            // DW_AT_low_pc, an address
	hasHigh                           // DW_AT_high_pc: high (ClassAddress) or highOff (ClassConstant)
	hasRanges                         // DW_AT_ranges, any form
	hasOrigin                         // DW_AT_abstract_origin, a reference
	hasSpec                           // DW_AT_specification, a reference
	hasCallFile                       // DW_AT_call_file, an int64
	hasCallLine                       // DW_AT_call_line, an int64
	hasCallCol                        // DW_AT_call_column, an int64
	hasInline                         // DW_AT_inline, any form
	hasDecl                           // DW_AT_declaration, any form
	hasSibling                        // DW_AT_sibling, a reference
)

// valKind is the Go type debug/dwarf gives an attribute value.
type valKind uint8

const (
	valOther  valKind = iota // []byte, bool, uint32 or nothing useful here
	valUint64                // uint64: addresses, signatures, rnglistx and loclistx
	valInt64                 // int64: constants and section offsets
	valOffset                // dwarf.Offset: references
	valString                // string
)

// dieVal is one attribute value, typed as debug/dwarf types it.
type dieVal struct {
	kind  valKind
	class dwarf.Class
	u     uint64 // valUint64, valOffset, and valInt64 as uint64(int64)
	s     string
}

// attrBit is the dieHas bit of an attribute die keeps, 0 for others.
func attrBit(a dwarf.Attr) dieHas {
	switch a {
	case dwarf.AttrName:
		return hasName
	case dwarf.AttrLinkageName:
		return hasLinkage
	case attrMIPSLinkageName:
		return hasMIPSLinkage
	case dwarf.AttrLowpc:
		return hasLow
	case dwarf.AttrHighpc:
		return hasHigh
	case dwarf.AttrRanges:
		return hasRanges
	case dwarf.AttrAbstractOrigin:
		return hasOrigin
	case dwarf.AttrSpecification:
		return hasSpec
	case dwarf.AttrCallFile:
		return hasCallFile
	case dwarf.AttrCallLine:
		return hasCallLine
	case dwarf.AttrCallColumn:
		return hasCallCol
	case dwarf.AttrInline:
		return hasInline
	case dwarf.AttrDeclaration:
		return hasDecl
	case dwarf.AttrSibling:
		return hasSibling
	}
	return 0
}

// set records the value of the attribute with bit (attrBit) in d.
func (d *die) set(bit dieHas, v *dieVal) {
	if bit == 0 || d.seen&bit != 0 {
		return
	}
	d.seen |= bit
	ok := false
	switch bit {
	case hasName, hasLinkage, hasMIPSLinkage:
		if ok = v.kind == valString; ok {
			switch bit {
			case hasName:
				d.name = v.s
			case hasLinkage:
				d.linkage = v.s
			default:
				d.mipsLinkage = v.s
			}
		}
	case hasLow:
		if ok = v.kind == valUint64; ok {
			d.low = v.u
		}
	case hasHigh:
		// Data.Ranges: an address, or a constant offset from low.
		switch {
		case v.class == dwarf.ClassAddress && v.kind == valUint64:
			d.high, ok = v.u, true
		case v.class == dwarf.ClassConstant && v.kind == valInt64:
			d.highOff, d.highConst, ok = int64(v.u), true, true
		}
	case hasRanges:
		d.ranges, ok = *v, true
	case hasOrigin, hasSpec, hasSibling:
		if ok = v.kind == valOffset; ok {
			switch bit {
			case hasOrigin:
				d.origin = dwarf.Offset(v.u)
			case hasSpec:
				d.spec = dwarf.Offset(v.u)
			default:
				d.sibling = dwarf.Offset(v.u)
			}
		}
	case hasCallFile, hasCallLine, hasCallCol:
		if ok = v.kind == valInt64; ok {
			switch bit {
			case hasCallFile:
				d.callFile = int64(v.u)
			case hasCallLine:
				d.callLine = int64(v.u)
			default:
				d.callCol = int64(v.u)
			}
		}
	case hasInline, hasDecl:
		ok = true
	}
	if ok {
		d.has |= bit
	}
}

// dieFromEntry fills d from an entry debug/dwarf read, as dieReader.next
// would from the same bytes.
func dieFromEntry(e *dwarf.Entry, d *die) {
	*d = die{off: e.Offset, tag: e.Tag, children: e.Children, own: true}
	for _, f := range e.Field {
		bit := attrBit(f.Attr)
		if bit == 0 {
			continue
		}
		v := dieVal{class: f.Class}
		switch x := f.Val.(type) {
		case uint64:
			v.kind, v.u = valUint64, x
		case int64:
			v.kind, v.u = valInt64, uint64(x)
		case dwarf.Offset:
			v.kind, v.u = valOffset, uint64(x)
		case string:
			v.kind, v.s = valString, x
		}
		d.set(bit, &v)
	}
}

// rangesField returns DW_AT_ranges as debug/dwarf's Entry holds it.
func (d *die) rangesField() dwarf.Field {
	f := dwarf.Field{Attr: dwarf.AttrRanges, Class: d.ranges.class}
	switch d.ranges.kind {
	case valUint64:
		f.Val = d.ranges.u
	case valInt64:
		f.Val = int64(d.ranges.u)
	case valOffset:
		f.Val = dwarf.Offset(d.ranges.u)
	case valString:
		f.Val = d.ranges.s
	}
	return f
}

// DWARF forms (DWARF 5 section 7.5.6, and GNU extensions debug/dwarf
// reads).
const (
	formAddr          = 0x01
	formBlock2        = 0x03
	formBlock4        = 0x04
	formData2         = 0x05
	formData4         = 0x06
	formData8         = 0x07
	formString        = 0x08
	formBlock         = 0x09
	formBlock1        = 0x0a
	formData1         = 0x0b
	formFlag          = 0x0c
	formSdata         = 0x0d
	formStrp          = 0x0e
	formUdata         = 0x0f
	formRefAddr       = 0x10
	formRef1          = 0x11
	formRef2          = 0x12
	formRef4          = 0x13
	formRef8          = 0x14
	formRefUdata      = 0x15
	formIndirect      = 0x16
	formSecOffset     = 0x17
	formExprloc       = 0x18
	formFlagPresent   = 0x19
	formStrx          = 0x1a
	formAddrx         = 0x1b
	formRefSup4       = 0x1c
	formStrpSup       = 0x1d
	formData16        = 0x1e
	formLineStrp      = 0x1f
	formRefSig8       = 0x20
	formImplicitConst = 0x21
	formLoclistx      = 0x22
	formRnglistx      = 0x23
	formRefSup8       = 0x24
	formStrx1         = 0x25
	formStrx2         = 0x26
	formStrx3         = 0x27
	formStrx4         = 0x28
	formAddrx1        = 0x29
	formAddrx2        = 0x2a
	formAddrx3        = 0x2b
	formAddrx4        = 0x2c
	formGNURefAlt     = 0x1f20
	formGNUStrpAlt    = 0x1f21
)

// formClass is debug/dwarf's formToClass: the class of a value of form
// for attribute a in a unit of version vers (ok false for an unknown form).
func formClass(form uint32, a dwarf.Attr, vers int) (dwarf.Class, bool) {
	switch form {
	case formIndirect:
		return dwarf.ClassUnknown, true
	case formAddr, formAddrx, formAddrx1, formAddrx2, formAddrx3, formAddrx4:
		return dwarf.ClassAddress, true
	case formBlock1, formBlock2, formBlock4, formBlock:
		// No attribute die keeps is an expression; the class of
		// the others does not matter here.
		return dwarf.ClassBlock, true
	case formData1, formData2, formData4, formData8, formSdata, formUdata, formData16, formImplicitConst:
		// In DWARF 2 and 3, section offsets were constants.
		if vers < 4 && a == dwarf.AttrRanges {
			return dwarf.ClassRangeListPtr, true
		}
		return dwarf.ClassConstant, true
	case formFlag, formFlagPresent:
		return dwarf.ClassFlag, true
	case formRefAddr, formRef1, formRef2, formRef4, formRef8, formRefUdata, formRefSup4, formRefSup8:
		return dwarf.ClassReference, true
	case formRefSig8:
		return dwarf.ClassReferenceSig, true
	case formString, formStrp, formStrx, formStrpSup, formLineStrp, formStrx1, formStrx2, formStrx3, formStrx4:
		return dwarf.ClassString, true
	case formSecOffset:
		if a == dwarf.AttrRanges {
			return dwarf.ClassRangeListPtr, true
		}
		return dwarf.ClassUnknown, true // another *ptr class: not one die keeps
	case formExprloc:
		return dwarf.ClassExprLoc, true
	case formGNURefAlt:
		return dwarf.ClassReferenceAlt, true
	case formGNUStrpAlt:
		return dwarf.ClassStringAlt, true
	case formLoclistx:
		return dwarf.ClassLocList, true
	case formRnglistx:
		return dwarf.ClassRngList, true
	}
	return 0, false
}

// abbrevAttr is one attribute specification of an abbreviation.
type abbrevAttr struct {
	attr     dwarf.Attr
	form     uint32
	bit      dieHas // attrBit(attr)
	implicit int64  // DW_FORM_implicit_const's value
}

type abbrev struct {
	tag      dwarf.Tag
	children bool
	attrs    []abbrevAttr
}

// abbrevTable is the abbreviations of one offset in .debug_abbrev, by
// code: dense when the codes are (they run from 1 in what compilers
// write), else in a map.
type abbrevTable struct {
	dense  []abbrev // by code; tag 0 marks a code not defined
	sparse map[uint32]*abbrev
}

func (t *abbrevTable) get(code uint32) *abbrev {
	if t.sparse != nil {
		return t.sparse[code]
	}
	if int64(code) < int64(len(t.dense)) && t.dense[code].attrs != nil {
		return &t.dense[code]
	}
	return nil
}

// parseAbbrevs reads the abbreviation table at off of .debug_abbrev, as
// debug/dwarf's parseAbbrev does (codes truncated to 32 bits, a later
// definition of a code replacing an earlier one).
func parseAbbrevs(sec []byte, off uint64) (*abbrevTable, error) {
	if off >= uint64(len(sec)) {
		return nil, fmt.Errorf(".debug_abbrev: table offset %#x beyond the section's %#x bytes", off, len(sec))
	}
	c := cursor{b: sec, pos: int(off), end: len(sec), sec: ".debug_abbrev"}
	m := map[uint32]*abbrev{}
	maxCode := uint32(0)
	for {
		code := uint32(c.uleb())
		if c.err != nil {
			return nil, c.err
		}
		if code == 0 {
			break
		}
		a := &abbrev{tag: dwarf.Tag(c.uleb())}
		a.children = c.u8() != 0
		a.attrs = []abbrevAttr{}
		for c.err == nil {
			at, form := c.uleb(), c.uleb()
			if at == 0 && form == 0 {
				break
			}
			aa := abbrevAttr{attr: dwarf.Attr(at), form: uint32(form), bit: attrBit(dwarf.Attr(at))}
			if form == formImplicitConst {
				aa.implicit = c.sleb()
			}
			a.attrs = append(a.attrs, aa)
		}
		if c.err != nil {
			return nil, c.err
		}
		m[code] = a
		maxCode = max(maxCode, code)
	}
	t := &abbrevTable{}
	if int64(maxCode) <= 2*int64(len(m))+64 {
		t.dense = make([]abbrev, maxCode+1)
		for code, a := range m {
			t.dense[code] = *a
		}
	} else {
		t.sparse = m
	}
	return t, nil
}

// cursor reads little- or big-endian DWARF values from b[pos:end],
// recording the first read past end as err (with the offset in the
// section) and returning zeros from then on.
type cursor struct {
	b        []byte
	pos, end int
	order    binary.ByteOrder
	sec      string
	err      error
}

func (c *cursor) fail(at int, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%s offset %#x: %s", c.sec, at, fmt.Sprintf(format, args...))
	}
	c.pos = c.end
}

// take returns the next n bytes.
func (c *cursor) take(n uint64) []byte {
	if c.err != nil {
		return nil
	}
	if n > uint64(c.end-c.pos) {
		c.fail(c.pos, "%d bytes needed, %d left", n, c.end-c.pos)
		return nil
	}
	p := c.b[c.pos : c.pos+int(n)]
	c.pos += int(n)
	return p
}

func (c *cursor) u8() uint8 {
	if c.err == nil && c.pos < c.end {
		v := c.b[c.pos]
		c.pos++
		return v
	}
	c.take(1)
	return 0
}

// fixed reads an unsigned value of n bytes (1, 2, 3, 4 or 8).
func (c *cursor) fixed(n int) uint64 {
	p := c.take(uint64(n))
	if p == nil {
		return 0
	}
	switch n {
	case 1:
		return uint64(p[0])
	case 2:
		return uint64(c.order.Uint16(p))
	case 3:
		// debug/dwarf's uint24.
		if c.order == binary.ByteOrder(binary.BigEndian) {
			return uint64(p[0])<<16 | uint64(p[1])<<8 | uint64(p[2])
		}
		return uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16
	case 4:
		return uint64(c.order.Uint32(p))
	}
	return c.order.Uint64(p)
}

// uleb reads an unsigned LEB128 value; like debug/dwarf, bits beyond 64
// are dropped.
func (c *cursor) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if c.err != nil {
			return 0
		}
		if c.pos >= c.end {
			c.fail(c.pos, "LEB128 value runs past the end")
			return 0
		}
		b := c.b[c.pos]
		c.pos++
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		if b < 0x80 {
			return v
		}
	}
}

func (c *cursor) sleb() int64 {
	var v int64
	var shift uint
	for {
		if c.err != nil {
			return 0
		}
		if c.pos >= c.end {
			c.fail(c.pos, "LEB128 value runs past the end")
			return 0
		}
		b := c.b[c.pos]
		c.pos++
		if shift < 64 {
			v |= int64(b&0x7f) << shift
		}
		shift += 7
		if b < 0x80 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

// cstring returns the NUL-terminated string at the cursor, as a view.
func (c *cursor) cstring() string {
	if c.err != nil {
		return ""
	}
	i := bytes.IndexByte(c.b[c.pos:c.end], 0)
	if i < 0 {
		c.fail(c.pos, "string without a terminating NUL")
		return ""
	}
	s := view(c.b[c.pos : c.pos+i])
	c.pos += i + 1
	return s
}

// view returns b as a string without copying it.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// unitHdr is a unit header of .debug_info (DWARF 5 section 7.5.1).
type unitHdr struct {
	off, die, end int // where the unit, its first DIE and the next unit start
	version       int
	dwarf64       bool
	addrSize      int
	abbrevOff     uint64
}

// parseUnitHdrs reads the headers of every unit of info, stopping at the
// first malformed one (debug/dwarf rejected the section then already).
func parseUnitHdrs(info []byte, order binary.ByteOrder) []unitHdr {
	var hs []unitHdr
	c := cursor{b: info, end: len(info), order: order, sec: ".debug_info"}
	for c.pos < c.end && c.err == nil {
		h := unitHdr{off: c.pos}
		n := c.fixed(4)
		if n == 0xffffffff {
			h.dwarf64 = true
			n = c.fixed(8)
		} else if n >= 0xfffffff0 {
			break
		}
		if c.err != nil || n > uint64(c.end-c.pos) {
			break
		}
		h.end = c.pos + int(n)
		u := cursor{b: info, pos: c.pos, end: h.end, order: order, sec: c.sec}
		h.version = int(u.fixed(2))
		offSize := 4
		if h.dwarf64 {
			offSize = 8
		}
		if h.version >= 5 {
			ut := u.u8()
			h.addrSize = int(u.u8())
			h.abbrevOff = u.fixed(offSize)
			switch ut {
			case 4, 5: // DW_UT_skeleton, DW_UT_split_compile: dwo_id
				u.take(8)
			case 2, 6: // DW_UT_type, DW_UT_split_type: signature, type offset
				u.take(8)
				u.take(uint64(offSize))
			}
		} else {
			h.abbrevOff = u.fixed(offSize)
			h.addrSize = int(u.u8())
		}
		if u.err != nil || h.version < 2 || h.version > 5 {
			break
		}
		h.die = u.pos
		hs = append(hs, h)
		c.pos = h.end
	}
	return hs
}

// dieSections is what dieReader reads besides the unit.
type dieSections struct {
	info, abbrev, str, lineStr, strOffsets, addr, rnglists []byte
	// strTab and lineStrTab find the ends of str's and lineStr's strings
	// in time that does not grow with how often each is named.
	strTab, lineStrTab *strTab
	order              binary.ByteOrder
	units              []unitHdr // sorted by offset
	abbrevs            map[uint64]*abbrevTable
}

// dieReader reads the DIEs of one unit.
type dieReader struct {
	s          *dieSections
	h          unitHdr
	ab         *abbrevTable
	c          cursor
	offSize    int
	addrBase   uint64 // DWARF 5 only, as debug/dwarf (unit.go)
	strOffBase uint64
	rngBase    uint64
	hasRngs    bool // .debug_rnglists is present
}

// unitReader returns a reader positioned at the first DIE of the unit
// whose first DIE is at cu.Offset, with the DWARF 5 bases from cu.
func (s *dieSections) unitReader(cu *dwarf.Entry, r *dieReader) error {
	i := sort.Search(len(s.units), func(i int) bool { return s.units[i].die >= int(cu.Offset) })
	if i == len(s.units) || s.units[i].die != int(cu.Offset) {
		return fmt.Errorf(".debug_info offset %#x: no unit header found for this unit entry", cu.Offset)
	}
	h := s.units[i]
	ab := s.abbrevs[h.abbrevOff]
	if ab == nil {
		var err error
		if ab, err = parseAbbrevs(s.abbrev, h.abbrevOff); err != nil {
			return fmt.Errorf("unit at .debug_info offset %#x: %w", h.off, err)
		}
		s.abbrevs[h.abbrevOff] = ab
	}
	*r = dieReader{s: s, h: h, ab: ab, offSize: 4, hasRngs: s.rnglists != nil,
		c: cursor{b: s.info, pos: h.die, end: h.end, order: s.order, sec: ".debug_info"}}
	if h.dwarf64 {
		r.offSize = 8
	}
	if h.version >= 5 {
		if v, ok := cu.Val(dwarf.AttrAddrBase).(int64); ok {
			r.addrBase = uint64(v)
		}
		if v, ok := cu.Val(dwarf.AttrStrOffsetsBase).(int64); ok {
			r.strOffBase = uint64(v)
		}
		if v, ok := cu.Val(dwarf.AttrRnglistsBase).(int64); ok {
			r.rngBase = uint64(v)
		}
	}
	return nil
}

// next reads the next DIE into d. At the end of the unit it returns
// false.
func (r *dieReader) next(d *die) (bool, error) {
	if r.c.pos >= r.c.end {
		return false, r.c.err
	}
	start := r.c.pos
	code := uint32(r.c.uleb())
	*d = die{off: dwarf.Offset(start)}
	if code == 0 {
		return true, r.c.err
	}
	a := r.ab.get(code)
	if a == nil {
		r.c.fail(start, "abbreviation code %d not in the unit's table", code)
		return false, r.c.err
	}
	d.tag, d.children = a.tag, a.children
	var v dieVal
	for i := range a.attrs {
		aa := &a.attrs[i]
		r.value(aa, aa.bit != 0 && d.seen&aa.bit == 0, &v)
		if r.c.err != nil {
			return false, r.c.err
		}
		if aa.bit != 0 {
			d.set(aa.bit, &v)
		}
	}
	return true, nil
}

// skipChildren skips the children of d, the DIE just read, as
// debug/dwarf's Reader.SkipChildren does: to its DW_AT_sibling when that
// lies ahead, else by reading them.
func (r *dieReader) skipChildren(d *die) error {
	if !d.children {
		return nil
	}
	depth := 0
	for {
		if d.has&hasSibling != 0 && int64(d.sibling) >= int64(r.c.pos) {
			if int64(d.sibling) > int64(r.c.end) {
				r.c.fail(int(d.off), "DW_AT_sibling %#x beyond the unit's end %#x", d.sibling, r.c.end)
				return r.c.err
			}
			r.c.pos = int(d.sibling)
		} else {
			depth++
		}
		for {
			if depth == 0 {
				return nil
			}
			ok, err := r.next(d)
			if err != nil || !ok {
				return err
			}
			if d.tag == 0 {
				depth--
				continue
			}
			if d.children {
				break
			}
		}
	}
}

// value reads the value of attribute aa into v (when want; else it only
// steps over it).
func (r *dieReader) value(aa *abbrevAttr, want bool, v *dieVal) {
	c := &r.c
	form := aa.form
	if form == formIndirect {
		form = uint32(c.uleb())
	}
	class, ok := formClass(form, aa.attr, r.h.version)
	if !ok {
		c.fail(c.pos, "unknown attribute form %#x", form)
		return
	}
	*v = dieVal{class: class}
	switch class {
	case dwarf.ClassConstant:
		r.constant(form, aa, v)
	case dwarf.ClassReference:
		r.reference(form, v)
	case dwarf.ClassString:
		r.str(form, want, v)
	default:
		r.other(form, aa, want, v)
	}
}

// constant reads a value of a constant form (ClassConstant, and
// ClassRangeListPtr for DWARF 2 and 3's constant offsets: formClass
// gives that class only to these forms or sec_offset).
func (r *dieReader) constant(form uint32, aa *abbrevAttr, v *dieVal) {
	c := &r.c
	switch form {
	case formData1:
		v.kind, v.u = valInt64, c.fixed(1)
	case formData2:
		v.kind, v.u = valInt64, c.fixed(2)
	case formData4:
		v.kind, v.u = valInt64, c.fixed(4)
	case formData8:
		v.kind, v.u = valInt64, c.fixed(8)
	case formData16:
		c.take(16)
	case formSdata:
		v.kind, v.u = valInt64, uint64(c.sleb())
	case formUdata:
		v.kind, v.u = valInt64, c.uleb()
	case formImplicitConst:
		v.kind, v.u = valInt64, uint64(aa.implicit)
	}
}

// reference reads a value of a reference form (an offset in
// .debug_info: within the unit, or from the section's start for
// ref_addr).
func (r *dieReader) reference(form uint32, v *dieVal) {
	c := &r.c
	unit := uint64(r.h.off)
	switch form {
	case formRefAddr:
		if r.h.version == 2 {
			v.kind, v.u = valOffset, r.addr(c)
		} else {
			v.kind, v.u = valOffset, c.fixed(r.offSize)
		}
	case formRef1:
		v.kind, v.u = valOffset, c.fixed(1)+unit
	case formRef2:
		v.kind, v.u = valOffset, c.fixed(2)+unit
	case formRef4:
		v.kind, v.u = valOffset, c.fixed(4)+unit
	case formRef8:
		v.kind, v.u = valOffset, c.fixed(8)+unit
	case formRefUdata:
		v.kind, v.u = valOffset, c.uleb()+unit
	case formRefSup4:
		c.take(4)
	case formRefSup8:
		v.kind, v.u = valUint64, c.fixed(8)
	}
}

// str reads a value of a string form.
func (r *dieReader) str(form uint32, want bool, v *dieVal) {
	c := &r.c
	switch form {
	case formString:
		v.kind, v.s = valString, c.cstring()
	case formStrp, formLineStrp:
		off := c.fixed(r.offSize)
		if want {
			sec, name := r.s.str, ".debug_str"
			if form == formLineStrp {
				sec, name = r.s.lineStr, ".debug_line_str"
			}
			v.kind, v.s = valString, r.stringAt(sec, name, off)
		}
	case formStrx, formStrx1, formStrx2, formStrx3, formStrx4:
		idx := r.index(form)
		if want {
			v.kind, v.s = valString, r.strx(idx)
		}
	case formStrpSup:
		if off := c.fixed(r.offSize); r.offSize == 8 {
			v.kind, v.u = valUint64, off // debug/dwarf: uint64, else uint32
		}
	}
}

// other reads a value of the remaining forms: addresses, blocks, flags,
// section offsets, signatures and list indexes.
func (r *dieReader) other(form uint32, aa *abbrevAttr, want bool, v *dieVal) {
	c := &r.c
	switch form {
	case formAddr:
		v.kind, v.u = valUint64, r.addr(c)
	case formAddrx, formAddrx1, formAddrx2, formAddrx3, formAddrx4:
		idx := r.index(form)
		if want {
			v.kind, v.u = valUint64, r.debugAddr(idx)
		}
	case formBlock1:
		c.take(c.fixed(1))
	case formBlock2:
		c.take(c.fixed(2))
	case formBlock4:
		c.take(c.fixed(4))
	case formBlock, formExprloc:
		c.take(c.uleb())
	case formFlag:
		c.take(1)
	case formFlagPresent:
	case formSecOffset, formGNURefAlt, formGNUStrpAlt:
		v.kind, v.u = valInt64, c.fixed(r.offSize)
	case formRefSig8:
		v.kind, v.u = valUint64, c.fixed(8)
	case formLoclistx:
		v.kind, v.u = valUint64, c.uleb()
	case formRnglistx:
		idx := c.uleb()
		if want {
			v.kind, v.u = valUint64, r.rnglistx(idx)
		}
	default:
		// A constant form read as ClassRangeListPtr (DWARF 2 and
		// 3's DW_AT_ranges).
		r.constant(form, aa, v)
	}
}

// index reads the index of an addrx or strx form.
func (r *dieReader) index(form uint32) uint64 {
	switch form {
	case formAddrx1, formStrx1:
		return r.c.fixed(1)
	case formAddrx2, formStrx2:
		return r.c.fixed(2)
	case formAddrx3, formStrx3:
		return r.c.fixed(3)
	case formAddrx4, formStrx4:
		return r.c.fixed(4)
	}
	return r.c.uleb()
}

// addr reads an address of the unit's address size from c.
func (r *dieReader) addr(c *cursor) uint64 {
	switch r.h.addrSize {
	case 1, 2, 4, 8:
		return c.fixed(r.h.addrSize)
	}
	c.fail(c.pos, "address size %d", r.h.addrSize)
	return 0
}

// at returns a cursor at off of sec (failing r's when off is outside).
func (r *dieReader) at(sec []byte, name string, off uint64) (cursor, bool) {
	if sec == nil || off >= uint64(len(sec)) {
		r.c.fail(r.c.pos, "%s offset %#x outside the section (%d bytes)", name, off, len(sec))
		return cursor{}, false
	}
	return cursor{b: sec, pos: int(off), end: len(sec), order: r.s.order, sec: name}, true
}

// sub reports c's error as r's.
func (r *dieReader) sub(c *cursor) {
	if c.err != nil && r.c.err == nil {
		r.c.fail(r.c.pos, "%v", c.err)
	}
}

func (r *dieReader) stringAt(sec []byte, name string, off uint64) string {
	c, ok := r.at(sec, name, off)
	if !ok {
		return ""
	}
	t := r.s.strTab
	if name == ".debug_line_str" {
		t = r.s.lineStrTab
	}
	if t != nil {
		if end, ok := t.end(int(off)); ok {
			return view(sec[off:end])
		}
	}
	s := c.cstring() // fails as it should
	r.sub(&c)
	return s
}

func (r *dieReader) strx(idx uint64) string {
	c, ok := r.at(r.s.strOffsets, ".debug_str_offsets", r.strOffBase+idx*uint64(r.offSize))
	if !ok {
		return ""
	}
	off := c.fixed(r.offSize)
	r.sub(&c)
	if c.err != nil {
		return ""
	}
	return r.stringAt(r.s.str, ".debug_str", off)
}

func (r *dieReader) debugAddr(idx uint64) uint64 {
	c, ok := r.at(r.s.addr, ".debug_addr", r.addrBase+idx*uint64(r.h.addrSize))
	if !ok {
		return 0
	}
	a := r.addr(&c)
	r.sub(&c)
	return a
}

func (r *dieReader) rnglistx(idx uint64) uint64 {
	c, ok := r.at(r.s.rnglists, ".debug_rnglists", r.rngBase+idx*uint64(r.offSize))
	if !ok {
		return 0
	}
	off := c.fixed(r.offSize)
	r.sub(&c)
	return r.rngBase + off
}

// dieWalker is the walk decodeUnit makes over a unit's DIEs: a dieReader,
// or debug/dwarf's Reader where the sections are not at hand (relocatable
// files).
type dieWalker interface {
	next(d *die) (bool, error)
	skipChildren(d *die) error
}

// dwarfWalker walks with debug/dwarf's Reader, which may give the same
// null entry forever (errStuck): left counts down the entries .debug_info
// has room for.
type dwarfWalker struct {
	r    *dwarf.Reader
	left int
}

func (w *dwarfWalker) next(d *die) (bool, error) {
	e, err := w.r.Next()
	if err != nil || e == nil {
		return false, err
	}
	if w.left--; w.left < 0 {
		return false, errStuck
	}
	dieFromEntry(e, d)
	return true, nil
}

func (w *dwarfWalker) skipChildren(*die) error {
	w.r.SkipChildren()
	return nil
}

// walker returns a walk over the DIEs of unit cu, starting at cu itself.
func (x *dwarfIndex) walker(cu *dwarf.Entry) (dieWalker, error) {
	if x.dies == nil {
		r := x.d.Reader()
		r.Seek(cu.Offset)
		return &dwarfWalker{r: r, left: x.infoLen}, nil
	}
	r := &x.dieRd
	if err := x.dies.unitReader(cu, r); err != nil {
		return nil, err
	}
	return r, nil
}

// newDIESections returns what dieReader needs from the loaded sections.
func newDIESections(sec map[string][]byte, order binary.ByteOrder) *dieSections {
	s := &dieSections{
		info: sec["info"], abbrev: sec["abbrev"], str: sec["str"], lineStr: sec["line_str"],
		strOffsets: sec["str_offsets"], addr: sec["addr"], rnglists: sec["rnglists"],
		order: order, abbrevs: map[uint64]*abbrevTable{},
	}
	s.strTab, s.lineStrTab = &strTab{b: s.str}, &strTab{b: s.lineStr}
	s.units = parseUnitHdrs(s.info, order)
	return s
}
