package symbolize

import (
	"debug/elf"
	"errors"
	"io"
	"strings"
)

// appendSymtab appends the code symbols of ef's .symtab to raw, as
// appendELFSyms(raw, ef, ef.Symbols()) would, and returns the table's
// IFUNC symbols (all that pltSymbols reads of it). It does not call
// elf.File.Symbols, which reads the table and its string table onto the
// heap and decodes every symbol with its name as a new string: 5 to 7 MB
// of heap at once for the Go compiler's 28,818 symbols, at the start of a
// batch (perfcheck symbolize loads the symbol table before its first
// answer, to print the warnings), which set the heap's high-water mark
// (gctrace: 5->12->12 MB at that collection). Here both tables are read
// into anonymous memory unmapped on return, and only the names kept are
// copied. A table that Symbols would refuse adds nothing, as it did.
func appendSymtab(raw []rawSym, ef *elf.File) ([]rawSym, []elf.Symbol) {
	symtab := ef.SectionByType(elf.SHT_SYMTAB)
	if symtab == nil {
		return raw, nil
	}
	var size int
	switch ef.Class {
	case elf.ELFCLASS64:
		size = elf.Sym64Size
	case elf.ELFCLASS32:
		size = elf.Sym32Size
	default:
		return raw, nil
	}
	data, freeData, err := tableBytes(symtab)
	if err != nil {
		return raw, nil
	}
	defer freeData()
	if len(data) == 0 || len(data)%size != 0 || symtab.Link == 0 || int(symtab.Link) >= len(ef.Sections) {
		return raw, nil
	}
	strs, freeStrs, err := tableBytes(ef.Sections[symtab.Link])
	if err != nil {
		return raw, nil
	}
	defer freeStrs()
	a := symAdder{ef: ef, rel: ef.Type == elf.ET_REL, views: true}
	bo := ef.ByteOrder
	var ifuncs []elf.Symbol
	var s elf.Symbol
	for p := data[size:]; len(p) >= size; p = p[size:] { // entry 0 is the null symbol
		if size == elf.Sym64Size {
			s.Name = stringAt(strs, bo.Uint32(p[0:4]))
			s.Info, s.Other = p[4], p[5]
			s.Section = elf.SectionIndex(bo.Uint16(p[6:8]))
			s.Value, s.Size = bo.Uint64(p[8:16]), bo.Uint64(p[16:24])
		} else {
			s.Name = stringAt(strs, bo.Uint32(p[0:4]))
			s.Value, s.Size = uint64(bo.Uint32(p[4:8])), uint64(bo.Uint32(p[8:12]))
			s.Info, s.Other = p[12], p[13]
			s.Section = elf.SectionIndex(bo.Uint16(p[14:16]))
		}
		n := len(raw)
		raw = a.add(raw, &s)
		if elf.ST_TYPE(s.Info) == elf.STT_GNU_IFUNC {
			f := s
			if len(raw) > n {
				f.Name = raw[n].name // add kept a copy
			} else {
				f.Name = strings.Clone(s.Name)
			}
			ifuncs = append(ifuncs, f)
		}
	}
	return raw, ifuncs
}

// stringAt is the NUL-terminated string at off in an ELF string table, as
// a view of it ("" when off is outside it or the string is unterminated,
// as debug/elf reads it).
func stringAt(strs []byte, off uint32) string {
	if uint64(off) >= uint64(len(strs)) {
		return ""
	}
	for end := int(off); end < len(strs); end++ {
		if strs[end] == 0 {
			return view(strs[off:end])
		}
	}
	return ""
}

// tableBytes returns the bytes of s read into anonymous memory, which
// free unmaps (read onto the heap where nothing can be mapped). A size
// over 1 GiB is left to s.Data, which bounds what it reads by what the
// file holds.
func tableBytes(s *elf.Section) (data []byte, free func(), err error) {
	noop := func() {}
	if s.Type == elf.SHT_NOBITS {
		return nil, noop, errors.New("section has no data")
	}
	if s.Size == 0 {
		return nil, noop, nil
	}
	if s.Size <= 1<<30 {
		if mem, err := mapAnon(int64(s.Size), false); err == nil {
			if _, err := io.ReadFull(s.Open(), mem.data); err != nil {
				mem.release()
				return nil, noop, err
			}
			return mem.data, mem.release, nil
		}
	}
	d, err := s.Data()
	return d, noop, err
}
