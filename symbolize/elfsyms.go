package symbolize

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// appendSymtab appends the code symbols of ef's .symtab to raw, as
// appendELFSyms(raw, ef, ef.Symbols(), nil) would, and returns the
// table's IFUNC symbols (all that pltSymbols reads of it). It does not
// call elf.File.Symbols, which decodes every symbol with its name as a new
// string, most of them data symbols dropped at once: here names are views
// of the string table, and only those kept are copied (nameCopier). A
// table that Symbols would refuse adds nothing, as it did.
func appendSymtab(raw []rawSym, ef *elf.File) ([]rawSym, []elf.Symbol) {
	return appendSymtabOf(raw, ef, false)
}

// appendSymtabOf is appendSymtab keeping the data objects too when
// objects is set (see symAdder).
func appendSymtabOf(raw []rawSym, ef *elf.File, objects bool) ([]rawSym, []elf.Symbol) {
	t, err := readSymTable(ef, elf.SHT_SYMTAB)
	if err != nil {
		return raw, nil
	}
	names := &nameCopier{left: len(t.strs.b)}
	a := symAdder{ef: ef, rel: ef.Type == elf.ET_REL, names: names, objects: objects}
	var ifuncs []elf.Symbol
	for i := range t.n {
		s := t.at(i)
		n := len(raw)
		raw = a.add(raw, &s)
		if elf.ST_TYPE(s.Info) == elf.STT_GNU_IFUNC {
			f := s
			if len(raw) > n {
				f.Name = raw[n].name // add kept a copy
			} else {
				f.Name = names.keep(s.Name)
			}
			ifuncs = append(ifuncs, f)
		}
	}
	return raw, ifuncs
}

// elfSymTable is an ELF symbol table read as it is: its entries but the null
// one, and its string table.
type elfSymTable struct {
	ef   *elf.File
	data []byte // the entries after entry 0
	size int    // bytes per entry
	n    int    // entries in data
	strs *strTab
}

// readSymTable reads ef's symbol table of type typ (SHT_SYMTAB or
// SHT_DYNSYM) as elf.File.Symbols and DynamicSymbols do, refusing what
// they refuse.
func readSymTable(ef *elf.File, typ elf.SectionType) (elfSymTable, error) {
	t := elfSymTable{ef: ef}
	sec := ef.SectionByType(typ)
	if sec == nil {
		return t, elf.ErrNoSymbols
	}
	switch ef.Class {
	case elf.ELFCLASS64:
		t.size = elf.Sym64Size
	case elf.ELFCLASS32:
		t.size = elf.Sym32Size
	default:
		return t, fmt.Errorf("%w: symbol table of ELF class %v", ErrMalformed, ef.Class)
	}
	data, err := tableBytes(sec)
	if err != nil {
		return t, fmt.Errorf("section %s at offset %#x: %w", sec.Name, sec.Offset, err)
	}
	if len(data) == 0 {
		return t, elf.ErrNoSymbols
	}
	if len(data)%t.size != 0 || sec.Link == 0 || int(sec.Link) >= len(ef.Sections) {
		return t, fmt.Errorf("section %s at offset %#x: %w: not a symbol table", sec.Name, sec.Offset, ErrMalformed)
	}
	strSec := ef.Sections[sec.Link]
	strs, err := tableBytes(strSec)
	if err != nil {
		return t, fmt.Errorf("section %s at offset %#x: %w", strSec.Name, strSec.Offset, err)
	}
	t.strs = &strTab{b: strs}
	t.data = data[t.size:] // entry 0 is the null symbol
	t.n = len(t.data) / t.size
	return t, nil
}

// at decodes entry i (after the null one), its name a view of the string
// table.
func (t elfSymTable) at(i int) elf.Symbol {
	p := t.data[i*t.size:][:t.size]
	bo := t.ef.ByteOrder
	var s elf.Symbol
	s.Name = t.strs.at(bo.Uint32(p[0:4]))
	if t.size == elf.Sym64Size {
		s.Info, s.Other = p[4], p[5]
		s.Section = elf.SectionIndex(bo.Uint16(p[6:8]))
		s.Value, s.Size = bo.Uint64(p[8:16]), bo.Uint64(p[16:24])
	} else {
		s.Value, s.Size = uint64(bo.Uint32(p[4:8])), uint64(bo.Uint32(p[8:12]))
		s.Info, s.Other = p[12], p[13]
		s.Section = elf.SectionIndex(bo.Uint16(p[14:16]))
	}
	return s
}

// symbols returns every entry (after the null one), as elf.File.Symbols
// would, but with names that are views of the string table: debug/elf
// copies every name, and a table whose entries all name one long string
// costs its count times that string, gigabytes for a library of one
// megabyte, before anything could check it.
func (t elfSymTable) symbols() []elf.Symbol {
	syms := make([]elf.Symbol, t.n)
	for i := range syms {
		syms[i] = t.at(i)
	}
	return syms
}

// nameCopier copies the names of the symbols kept from a table read as
// views of its string table, so that the table need not stay, but no
// more bytes in all than the table holds: past that (entries naming one
// long string again and again), keeping the table is the cheaper, and a
// name stays a view of it.
type nameCopier struct{ left int }

func (c *nameCopier) keep(name string) string {
	if len(name) > c.left {
		return name
	}
	c.left -= len(name)
	return strings.Clone(name)
}

// strTab is a table of NUL-terminated strings read by offset (an ELF
// string table, .debug_str), each string a view of it ("" when the offset
// is outside it or the string is unterminated, as debug/elf reads it). A lookup scans to the string's NUL, until the scans
// have covered four times the table: a table whose entries name its
// strings again and again (one long string, or its suffixes) would make
// reading the names take the table's size times their count. Then the
// NULs are indexed once, and each lookup is a binary search.
type strTab struct {
	b       []byte
	scanned int
	indexed bool
	nuls    []int // where each NUL is, once indexed
}

func (t *strTab) at(off uint32) string {
	if uint64(off) >= uint64(len(t.b)) {
		return ""
	}
	end, ok := t.end(int(off))
	if !ok {
		return ""
	}
	return view(t.b[off:end])
}

// end returns where the string at off (within the table) ends, at its
// NUL; false when it has none.
func (t *strTab) end(off int) (int, bool) {
	if !t.indexed && t.scanned <= 4*len(t.b) {
		n := bytes.IndexByte(t.b[off:], 0)
		if n < 0 {
			t.scanned += len(t.b) - off
			return 0, false
		}
		t.scanned += n + 1
		return off + n, true
	}
	if !t.indexed {
		t.indexed = true
		for i, c := range t.b {
			if c == 0 {
				t.nuls = append(t.nuls, i)
			}
		}
	}
	j, _ := slices.BinarySearch(t.nuls, off)
	if j == len(t.nuls) {
		return 0, false
	}
	return t.nuls[j], true
}

// tableBytes returns the bytes of s, a symbol or string table.
func tableBytes(s *elf.Section) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS {
		return nil, errors.New("section has no data")
	}
	if s.Size == 0 {
		return nil, nil
	}
	return sectionData(s)
}
