package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
)

// pltSymbols synthesizes "foo@plt" for each PLT stub, as objdump -d and
// perf do (perf: dso__synthesize_plt_symbols in
// tools/perf/util/symbol-elf.c), on x86-64, i386 and AArch64. Rather than
// assume a stub layout (lazy .plt, IBT .plt.sec, .plt.got, BTI and PAC
// variants, each with its own entry size), it decodes the instructions
// that load the stub's GOT slot and names the stub after the dynamic
// relocation that fills that slot. Other architectures get no PLT names.
// syms and dyn are ef's .symtab and .dynsym (nil when unreadable).
func pltSymbols(ef *elf.File, syms, dyn []elf.Symbol) ([]rawSym, error) {
	switch {
	case ef.Machine == elf.EM_X86_64 && ef.Class == elf.ELFCLASS64,
		ef.Machine == elf.EM_386 && ef.Class == elf.ELFCLASS32,
		ef.Machine == elf.EM_AARCH64 && ef.Class == elf.ELFCLASS64:
	default:
		return nil, nil
	}
	slots, err := gotSlotNames(ef, syms, dyn)
	if err != nil || len(slots) == 0 {
		return nil, err
	}
	// Each stub's name is a copy of its slot's name: twice the string
	// tables the names come from, and room for "*ABS*+0x…@plt" per slot,
	// is more than real stubs need (one per imported function), and less
	// than the gigabytes of stubs that all name one long string.
	limit := 2*(strtabSize(ef, elf.SHT_DYNSYM)+strtabSize(ef, elf.SHT_SYMTAB)) + 32*uint64(len(slots))
	var used uint64
	var out []rawSym
	for _, name := range []string{".plt", ".plt.sec", ".plt.got"} {
		sec := ef.Section(name)
		if sec == nil || sec.Type == elf.SHT_NOBITS || sec.Size > 64<<20 {
			continue
		}
		data, err := sectionData(sec)
		if err != nil {
			return out, fmt.Errorf("section %s at offset %#x: %w: %w", name, sec.Offset, ErrMalformed, err)
		}
		var stubs []pltStub
		if ef.Machine == elf.EM_AARCH64 {
			stubs = aarch64Stubs(sec.Addr, data)
		} else {
			stubs = x86Stubs(ef, sec, data)
		}
		for _, st := range stubs {
			if n, ok := slots[st.slot]; ok {
				if used += uint64(len(n) + len("@plt")); used > limit {
					return out, fmt.Errorf("section %s at offset %#x: %w: the names of its stubs take more than twice the string tables",
						name, sec.Offset, ErrMalformed)
				}
				out = append(out, rawSym{
					value: st.addr,
					size:  st.size,
					name:  n + "@plt",
					rank:  aliasRank(elf.STB_GLOBAL, elf.STT_FUNC, st.size),
					limit: sec.Addr + sec.Size,
				})
			}
		}
	}
	return out, nil
}

// strtabSize is the size of the string table of ef's symbol table of
// type typ, 0 when there is none.
func strtabSize(ef *elf.File, typ elf.SectionType) uint64 {
	t := ef.SectionByType(typ)
	if t == nil || t.Link == 0 || int(t.Link) >= len(ef.Sections) {
		return 0
	}
	return ef.Sections[t.Link].Size
}

// pltStub is one decoded stub: where it is and the GOT slot it jumps
// through.
type pltStub struct {
	addr, size, slot uint64
}

// x86Stubs decodes x86-64 and i386 stubs. Each 16-byte entry (8-byte in an
// 8-byte-entry .plt.got) holds an indirect jump through its GOT slot,
// possibly after endbr64/endbr32 and a bnd prefix:
//
//	x86-64:        ff 25 disp32   jmp *disp32(%rip)
//	i386 non-PIC:  ff 25 abs32    jmp *abs32
//	i386 PIC:      ff a3 disp32   jmp *disp32(%ebx), %ebx = the GOT
//
// where the i386 GOT pointer is _GLOBAL_OFFSET_TABLE_, the start of
// .got.plt (of .got when there is none), as the i386 psABI defines it.
// The first indirect jump of an entry is its own: the lazy header's jump
// reads the resolver's slot, which no relocation names.
func x86Stubs(ef *elf.File, sec *elf.Section, data []byte) []pltStub {
	stride := uint64(16)
	if sec.Name == ".plt.got" && sec.Entsize == 8 {
		stride = 8
	}
	var got uint64
	if ef.Machine == elf.EM_386 {
		if s := ef.Section(".got.plt"); s != nil {
			got = s.Addr
		} else if s := ef.Section(".got"); s != nil {
			got = s.Addr
		}
	}
	var out []pltStub
	for off := uint64(0); off+stride <= uint64(len(data)); off += stride {
		entry := data[off : off+stride]
		for k := 0; k+6 <= len(entry); k++ {
			if entry[k] != 0xff || (entry[k+1] != 0x25 && entry[k+1] != 0xa3) {
				continue
			}
			v := ef.ByteOrder.Uint32(entry[k+2:])
			var slot uint64
			switch {
			case ef.Machine == elf.EM_X86_64 && entry[k+1] == 0x25:
				slot = sec.Addr + off + uint64(k) + 6 + uint64(int64(int32(v)))
			case ef.Machine == elf.EM_386 && entry[k+1] == 0x25:
				slot = uint64(v)
			case ef.Machine == elf.EM_386 && entry[k+1] == 0xa3 && got != 0:
				slot = uint64(uint32(got + uint64(int64(int32(v)))))
			default:
				continue
			}
			out = append(out, pltStub{addr: sec.Addr + off, size: stride, slot: slot})
			break
		}
	}
	return out
}

// AArch64 instruction encodings read by aarch64Stubs (Arm ARM, C6.2).
const (
	a64AdrpX16Mask = 0x9f00001f // ADRP with its immediate masked out
	a64AdrpX16     = 0x90000010 // ADRP x16, page
	a64LdrX17Mask  = 0xffc003ff // LDR (unsigned offset, 64-bit) with imm12 masked out
	a64LdrX17X16   = 0xf9400211 // LDR x17, [x16, #imm12*8]
	a64BTIC        = 0xd503245f // BTI c
)

// aarch64Stubs decodes AArch64 stubs, whose every variant (plain, BTI,
// PAC) loads its GOT slot with
//
//	adrp x16, PAGE          x16 = (pc & ~0xfff) + PAGE offset
//	ldr  x17, [x16, #OFF]   slot = x16 + OFF
//
// possibly after "bti c", which then starts the stub. The lazy header
// also loads through x16/x17, from the resolver's slot, which no
// relocation names. A stub runs to the next one or the end of the section.
func aarch64Stubs(base uint64, data []byte) []pltStub {
	var out []pltStub
	le := binary.LittleEndian
	for off := 0; off+8 <= len(data); off += 4 {
		adrp, ldr := le.Uint32(data[off:]), le.Uint32(data[off+4:])
		if adrp&a64AdrpX16Mask != a64AdrpX16 || ldr&a64LdrX17Mask != a64LdrX17X16 {
			continue
		}
		pc := base + uint64(off)
		imm := int64(adrp>>5&0x7ffff)<<2 | int64(adrp>>29&3)
		imm = imm << 43 >> 43 // sign-extend 21 bits
		page := pc&^0xfff + uint64(imm<<12)
		slot := page + uint64(ldr>>10&0xfff)*8
		start := pc
		if off >= 4 && le.Uint32(data[off-4:]) == a64BTIC {
			start -= 4
		}
		out = append(out, pltStub{addr: start, slot: slot})
	}
	for i := range out {
		end := base + uint64(len(data))
		if i+1 < len(out) {
			end = out[i+1].addr
		}
		out[i].size = end - out[i].addr
	}
	return out
}

// Dynamic relocation types gotSlotNames reads, per machine (the psABIs;
// debug/elf names some of them).
const (
	r386GlobDat     = 6
	r386JmpSlot     = 7
	r386Irelative   = 42
	rA64GlobDat     = 1025
	rA64JumpSlot    = 1026
	rA64Irelative   = 1032
	rX8664GlobDat   = uint32(elf.R_X86_64_GLOB_DAT)
	rX8664JmpSlot   = uint32(elf.R_X86_64_JMP_SLOT)
	rX8664Irelative = uint32(elf.R_X86_64_IRELATIVE)
)

// gotSlotNames maps GOT slot addresses to the symbol their dynamic
// relocation (JUMP_SLOT in .rela.plt/.rel.plt, GLOB_DAT in
// .rela.dyn/.rel.dyn) binds. An IRELATIVE slot (an IFUNC called through
// the PLT of a non-PIE or static binary) has no symbol: its resolver's
// address is the addend (RELA) or the slot's initial content (REL, i386).
// perf names the stub after the IFUNC symbol at that address (get_ifunc_name
// in tools/perf/util/symbol-elf.c), else as objdump does, "*ABS*+0xADDR".
func gotSlotNames(ef *elf.File, syms, dyn []elf.Symbol) (map[uint64]string, error) {
	if dyn == nil {
		return nil, nil // no .dynsym (or none readable): nothing to name
	}
	var globDat, jmpSlot, irelative uint32
	rela, entsize := true, uint64(24)
	switch ef.Machine {
	case elf.EM_X86_64:
		globDat, jmpSlot, irelative = rX8664GlobDat, rX8664JmpSlot, rX8664Irelative
	case elf.EM_AARCH64:
		globDat, jmpSlot, irelative = rA64GlobDat, rA64JumpSlot, rA64Irelative
	case elf.EM_386:
		globDat, jmpSlot, irelative = r386GlobDat, r386JmpSlot, r386Irelative
		rela, entsize = false, 8
	default:
		return nil, nil
	}
	m := make(map[uint64]string)
	var ifuncs map[uint64]string
	for _, s := range ef.Sections {
		if s.Size > 64<<20 || s.Entsize != entsize {
			continue
		}
		if rela && (s.Type != elf.SHT_RELA || s.Name != ".rela.plt" && s.Name != ".rela.dyn") ||
			!rela && (s.Type != elf.SHT_REL || s.Name != ".rel.plt" && s.Name != ".rel.dyn") {
			continue
		}
		d, err := sectionData(s)
		if err != nil {
			return m, fmt.Errorf("section %s at offset %#x: %w: %w", s.Name, s.Offset, ErrMalformed, err)
		}
		bo := ef.ByteOrder
		for i := 0; uint64(i)+entsize <= uint64(len(d)); i += int(entsize) {
			var off, idx, addend uint64
			var typ uint32
			if rela {
				off = bo.Uint64(d[i:])
				info := bo.Uint64(d[i+8:])
				typ, idx, addend = uint32(info), info>>32, bo.Uint64(d[i+16:])
			} else {
				off = uint64(bo.Uint32(d[i:]))
				info := bo.Uint32(d[i+4:])
				typ, idx = info&0xff, uint64(info>>8)
			}
			switch typ {
			case irelative:
				if !rela {
					v, ok := readWord32(ef, off)
					if !ok {
						continue
					}
					addend = v
				}
				if ifuncs == nil {
					ifuncs = ifuncNames(syms, dyn)
				}
				if n, ok := ifuncs[addend]; ok {
					m[off] = n
				} else {
					m[off] = fmt.Sprintf("*ABS*+%#x", addend)
				}
			case jmpSlot, globDat:
				// DynamicSymbols drops the null entry 0, hence idx-1.
				if idx == 0 || idx-1 >= uint64(len(dyn)) {
					continue
				}
				if n := dyn[idx-1].Name; n != "" {
					m[off] = n
				}
			}
		}
	}
	return m, nil
}

// readWord32 reads the 32-bit word at address addr from the file's
// section holding it (an i386 GOT slot).
func readWord32(ef *elf.File, addr uint64) (uint64, bool) {
	for _, s := range ef.Sections {
		if s.Type == elf.SHT_NOBITS || addr < s.Addr || addr+4 > s.Addr+s.Size || s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		var b [4]byte
		if _, err := s.ReadAt(b[:], int64(addr-s.Addr)); err != nil {
			return 0, false
		}
		return uint64(ef.ByteOrder.Uint32(b[:])), true
	}
	return 0, false
}

// ifuncNames maps the value of every STT_GNU_IFUNC symbol of .symtab
// and .dynsym to its name; of several at one value the alias rule picks.
func ifuncNames(syms, dyn []elf.Symbol) map[uint64]string {
	best := map[uint64]rawSym{}
	for _, s := range slices.Concat(syms, dyn) {
		if elf.ST_TYPE(s.Info) != elf.STT_GNU_IFUNC || s.Value == 0 || s.Name == "" {
			continue
		}
		r := rawSym{value: s.Value, name: s.Name, rank: aliasRank(elf.ST_BIND(s.Info), elf.STT_GNU_IFUNC, s.Size)}
		if b, ok := best[s.Value]; !ok || lessAlias(&r, &b) {
			best[s.Value] = r
		}
	}
	m := make(map[uint64]string, len(best))
	for v, r := range best {
		m[v] = r.name
	}
	return m
}
