package symbolize

import (
	"debug/elf"
	"slices"
)

// symbolValue returns the value of the first symbol of ef's symbol table
// (.symtab) named one of names, as a search of ef.Symbols() would, without
// decoding every symbol with its name as a string: only the names are
// compared, as views of the string table.
func symbolValue(ef *elf.File, names ...string) (uint64, bool) {
	t, err := readSymTable(ef, elf.SHT_SYMTAB)
	if err != nil {
		return 0, false
	}
	for i := range t.n {
		if s := t.at(i); slices.Contains(names, s.Name) {
			return s.Value, true
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
