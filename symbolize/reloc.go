package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// relocArch is how a machine's relocatable files relocate their DWARF
// sections: the types that write a symbol's value plus an addend in 4 or
// 8 bytes, which are the only ones DWARF sections use, as debug/elf's
// File.DWARF applies them (applyRelocations in debug/elf/file.go).
type relocArch struct {
	rela  bool           // entries carry their addend; else it is in place
	sizes map[uint32]int // relocation type to bytes written
	any   bool           // applied whatever section the symbol is in
}

// relocArchs are the machines whose relocatable files (kernel modules)
// perfcheck reads DWARF from. Others' DWARF is not used (relocate says
// so): debug/dwarf is given no bytes that were not checked first.
var relocArchs = map[elf.Machine]relocArch{
	elf.EM_X86_64:    {rela: true, sizes: map[uint32]int{uint32(elf.R_X86_64_64): 8, uint32(elf.R_X86_64_32): 4}},
	elf.EM_AARCH64:   {rela: true, sizes: map[uint32]int{uint32(elf.R_AARCH64_ABS64): 8, uint32(elf.R_AARCH64_ABS32): 4}},
	elf.EM_PPC64:     {rela: true, sizes: map[uint32]int{uint32(elf.R_PPC64_ADDR64): 8, uint32(elf.R_PPC64_ADDR32): 4}},
	elf.EM_RISCV:     {rela: true, sizes: map[uint32]int{uint32(elf.R_RISCV_64): 8, uint32(elf.R_RISCV_32): 4}},
	elf.EM_S390:      {rela: true, sizes: map[uint32]int{uint32(elf.R_390_64): 8, uint32(elf.R_390_32): 4}},
	elf.EM_LOONGARCH: {rela: true, sizes: map[uint32]int{uint32(elf.R_LARCH_64): 8, uint32(elf.R_LARCH_32): 4}},
	elf.EM_386:       {sizes: map[uint32]int{uint32(elf.R_386_32): 4}, any: true},
	elf.EM_ARM:       {sizes: map[uint32]int{uint32(elf.R_ARM_ABS32): 4}, any: true},
}

// relocate applies to the DWARF sections in sec (by name, as loadSections
// returns them) the relocations of the relocatable file ef, in place, as
// elf.File.DWARF does, so that they can be checked (checkLineTables,
// countUnits) and read exactly as debug/dwarf would read them relocated.
// Each relocation writes within its section or is skipped, as debug/elf
// skips it; relocation sections and the symbol table are read through
// debug/elf, whose compressed ones were reserved when ef was opened.
func relocate(ef *elf.File, sec map[string][]byte) error {
	arch, ok := relocArchs[ef.Machine]
	wantClass := elf.ELFCLASS32
	if arch.rela {
		wantClass = elf.ELFCLASS64
	}
	if !ok || ef.Class != wantClass {
		return fmt.Errorf("%w: relocations of a %v %v relocatable file are not applied, so its DWARF is not read", errors.ErrUnsupported, ef.Class, ef.Machine)
	}
	var syms []elf.Symbol
	for _, name := range dwarfSections {
		b := sec[name]
		if b == nil {
			continue
		}
		// The section loadSections read.
		s := ef.Section(".debug_" + name)
		if s == nil {
			s = ef.Section(".zdebug_" + name)
		}
		i := slices.Index(ef.Sections, s)
		for _, r := range ef.Sections {
			if (r.Type != elf.SHT_RELA && r.Type != elf.SHT_REL) || int(r.Info) != i {
				continue
			}
			rels, err := sectionData(r)
			if err != nil {
				return fmt.Errorf("section %s at offset %#x: %w", r.Name, r.Offset, err)
			}
			if syms == nil {
				// Names are not needed: views, not debug/elf's copies
				// (readSymTable).
				t, err := readSymTable(ef, elf.SHT_SYMTAB)
				if err != nil {
					return fmt.Errorf("symbol table: %w", err)
				}
				syms = t.symbols()
			}
			if err := arch.apply(ef, b, rels, r.Type == elf.SHT_RELA, syms); err != nil {
				return fmt.Errorf("section %s at offset %#x: %w", r.Name, r.Offset, err)
			}
		}
	}
	return nil
}

// apply applies the relocation entries rels (RELA when rela) to dst.
func (a relocArch) apply(ef *elf.File, dst, rels []byte, rela bool, syms []elf.Symbol) error {
	size := 8 // Elf32_Rel
	if rela {
		size = 24 // Elf64_Rela
	}
	if rela != a.rela {
		return fmt.Errorf("%w: %v relocations in a %v file", ErrMalformed, map[bool]string{true: "RELA", false: "REL"}[rela], ef.Machine)
	}
	if len(rels)%size != 0 {
		return fmt.Errorf("%w: length %d is not a multiple of %d", ErrMalformed, len(rels), size)
	}
	bo := ef.ByteOrder
	for e := rels; len(e) > 0; e = e[size:] {
		var off, sym uint64
		var typ uint32
		var addend int64
		if rela {
			info := bo.Uint64(e[8:])
			off, sym, typ, addend = bo.Uint64(e), info>>32, uint32(info&0xffff), int64(bo.Uint64(e[16:]))
		} else {
			info := bo.Uint32(e[4:])
			off, sym, typ = uint64(bo.Uint32(e)), uint64(info>>8), info&0xff
		}
		n := a.sizes[typ]
		if n == 0 || sym == 0 || sym > uint64(len(syms)) {
			continue
		}
		s := &syms[sym-1]
		if !a.any && (s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE) {
			continue
		}
		put(bo, dst, off, n, s.Value, addend, !rela)
	}
	return nil
}

// put writes sym+addend (plus what is there, for REL) in n bytes at off
// of dst, and nothing when that is not within dst or the addend is
// negative, as debug/elf's putUint.
func put(bo binary.ByteOrder, dst []byte, off uint64, n int, sym uint64, addend int64, inPlace bool) {
	if off > math.MaxUint64-uint64(n) || off+uint64(n) > uint64(len(dst)) || addend < 0 {
		return
	}
	p := dst[off : off+uint64(n)]
	if n == 4 {
		a := uint32(addend)
		if inPlace {
			a += bo.Uint32(p)
		}
		bo.PutUint32(p, uint32(sym)+a)
		return
	}
	a := uint64(addend)
	if inPlace {
		a += bo.Uint64(p)
	}
	bo.PutUint64(p, sym+a)
}
