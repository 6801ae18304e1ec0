package symbolize

import (
	"debug/elf"
	"errors"
	"strings"
)

// appendSymtab appends the code symbols of ef's .symtab to raw, as
// appendELFSyms(raw, ef, ef.Symbols()) would, and returns the table's
// IFUNC symbols (all that pltSymbols reads of it). It does not call
// elf.File.Symbols, which decodes every symbol with its name as a new
// string, most of them data symbols dropped at once: here names are views
// of the string table, and only those kept are copied. A table that
// Symbols would refuse adds nothing, as it did.
func appendSymtab(raw []rawSym, ef *elf.File) ([]rawSym, []elf.Symbol) {
	return appendSymtabOf(raw, ef, false)
}

// appendSymtabOf is appendSymtab keeping the data objects too when
// objects is set (see symAdder).
func appendSymtabOf(raw []rawSym, ef *elf.File, objects bool) ([]rawSym, []elf.Symbol) {
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
	data, err := tableBytes(symtab)
	if err != nil {
		return raw, nil
	}
	if len(data) == 0 || len(data)%size != 0 || symtab.Link == 0 || int(symtab.Link) >= len(ef.Sections) {
		return raw, nil
	}
	strs, err := tableBytes(ef.Sections[symtab.Link])
	if err != nil {
		return raw, nil
	}
	a := symAdder{ef: ef, rel: ef.Type == elf.ET_REL, views: true, objects: objects}
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
