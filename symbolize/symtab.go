package symbolize

import (
	"cmp"
	"debug/elf"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// symbol is one entry of a sorted symbol index. end is exclusive.
type symbol struct {
	start, end uint64
	name       string
}

// symTable is a sorted, alias-resolved list of code symbols. maxEnd[i] is
// the largest end among syms[:i+1], so that a lookup can find a symbol that
// encloses a later one (nested or overlapping symbols) without a scan.
type symTable struct {
	syms   []symbol
	maxEnd []uint64
	// files holds the STT_FILE scope of the local symbols that have
	// one, by index in syms, in order: most symbols have none (a Go
	// binary's none at all), so a field in every symbol would cost more.
	files []symFile
}

// symFile is the STT_FILE scope of syms[i].
type symFile struct {
	i    int
	file string
}

// lookup returns the innermost symbol covering addr: the one with the
// greatest start <= addr whose range contains addr.
func (t *symTable) lookup(addr uint64) (*symbol, bool) {
	if i, ok := t.find(addr); ok {
		return &t.syms[i], true
	}
	return nil, false
}

// find is lookup returning the symbol's index in syms.
func (t *symTable) find(addr uint64) (int, bool) {
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].start > addr }) - 1
	for ; i >= 0 && t.maxEnd[i] > addr; i-- {
		if addr < t.syms[i].end {
			return i, true
		}
	}
	return 0, false
}

// fileOf returns the STT_FILE scope of syms[i], "" for none.
func (t *symTable) fileOf(i int) string {
	j := sort.Search(len(t.files), func(j int) bool { return t.files[j].i >= i })
	if j < len(t.files) && t.files[j].i == i {
		return t.files[j].file
	}
	return ""
}

// rawSym is a symbol before sizing and alias resolution.
type rawSym struct {
	value, size uint64
	name        string
	rank        int
	limit       uint64 // end of the section holding it, bounds zero-sized symbols
	file        string // STT_FILE scope of a local symbol
	seq         int    // position in the tables as read: table order (buildSymTable)
}

// aliasRank orders symbols that share an address, lower first. The rule
// is perf's choose_best_symbol (tools/perf/util/symbol.c), so that names
// match perf report: a symbol with a size beats a zero-sized label, a
// non-weak one a weak one, a global one a local one; lessAlias then prefers
// fewer leading underscores ("malloc" over "__libc_malloc"), then the
// longer name, and finally, as perf's symbols__fixup_duplicate keeps the
// first of two it cannot rank, the one first in table order (glibc's
// pthread_once@GLIBC_2.2.5 before pthread_once@@GLIBC_2.34, of one
// length). A function (or IFUNC), or a data object
// where those are kept (DataSymbol), beats an untyped label of the same
// rank.
func aliasRank(bind elf.SymBind, typ elf.SymType, size uint64) int {
	r := 0
	if size == 0 {
		r += 8
	}
	if bind == elf.STB_WEAK {
		r += 4
	}
	if bind != elf.STB_GLOBAL {
		r += 2
	}
	if typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC && typ != elf.STT_OBJECT {
		r++
	}
	return r
}

func lessAlias(a, b *rawSym) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	ua, ub := leadingUnderscores(a.name), leadingUnderscores(b.name)
	if ua != ub {
		return ua < ub
	}
	if len(a.name) != len(b.name) {
		return len(a.name) > len(b.name)
	}
	return a.seq < b.seq
}

func leadingUnderscores(s string) int {
	n := 0
	for n < len(s) && s[n] == '_' {
		n++
	}
	return n
}

// buildSymTable sizes zero-sized symbols up to the next symbol (or the end
// of their section), as perf's symbols__fixup_end does, resolves aliases
// with lessAlias and sorts by address. raw is in table order: the table
// perf reads first, each in its own order.
func buildSymTable(raw []rawSym) *symTable {
	for i := range raw {
		raw[i].seq = i
	}
	slices.SortFunc(raw, func(a, b rawSym) int {
		switch {
		case a.value != b.value:
			return cmp.Compare(a.value, b.value)
		case lessAlias(&a, &b):
			return -1
		case lessAlias(&b, &a):
			return 1
		}
		return 0
	})
	t := &symTable{syms: make([]symbol, 0, len(raw))}
	for i := 0; i < len(raw); {
		j := i + 1
		// The best alias is raw[i]; the group's extent is its largest size.
		size := raw[i].size
		for ; j < len(raw) && raw[j].value == raw[i].value; j++ {
			if raw[j].size > size {
				size = raw[j].size
			}
		}
		start := raw[i].value
		end := start + size
		if size == 0 {
			end = raw[i].limit
			if j < len(raw) && raw[j].value < end || end <= start {
				if j < len(raw) {
					end = raw[j].value
				} else {
					end = start + 1
				}
			}
		}
		if raw[i].file != "" {
			t.files = append(t.files, symFile{len(t.syms), raw[i].file})
		}
		t.syms = append(t.syms, symbol{start: start, end: end, name: raw[i].name})
		i = j
	}
	t.files = slices.Clip(t.files)
	t.setMaxEnd()
	return t
}

// setMaxEnd computes maxEnd from syms (see symTable).
func (t *symTable) setMaxEnd() {
	t.maxEnd = make([]uint64, len(t.syms))
	var m uint64
	for i, s := range t.syms {
		m = max(m, s.end)
		t.maxEnd[i] = m
	}
}

// readELFSymbols indexes .symtab, .dynsym, the MiniDebugInfo .symtab and the
// PLT of the binary, plus the .symtab of a separate debug file when the
// binary itself has none (stripped, with or without .dynsym).
func (b *Binary) readELFSymbols() (*symTable, error) { return b.readSymbols(false) }

// readSymbols is readELFSymbols, with the data objects of every table
// when objects is set (symAdder.objects).
func (b *Binary) readSymbols(objects bool) (*symTable, error) {
	var raw []rawSym
	var firstErr error
	err := safely(func() error {
		// Each table is parsed once: the PLT reads them too (of
		// .symtab, only its IFUNC symbols).
		var syms, dyn []elf.Symbol
		raw, syms = appendSymtabOf(raw, b.ef, objects)
		if t, err := readSymTable(b.ef, elf.SHT_DYNSYM); err == nil {
			dyn = t.symbols()
			raw = appendELFSymsOf(raw, b.ef, dyn, &nameCopier{left: len(t.strs.b)}, objects)
		}
		mini, cost, err := b.miniDebugInfo()
		defer b.bud.Release(cost) // mini is dropped on return
		if err != nil {
			firstErr = err
		} else if mini != nil {
			raw, _ = appendSymtabOf(raw, mini, objects)
		}
		plt, err := pltSymbols(b.ef, syms, dyn)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", b.path, err)
		}
		raw = append(raw, plt...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.path, err)
	}
	if b.ef.Section(".symtab") == nil {
		// A stripped binary: the separate debug file keeps the .symtab,
		// with the local functions and labels .dynsym lacks (ld.so's
		// _start and _dl_start_user). perf reads it too: dso__load
		// prefers a debug file's .symtab to the runtime .dynsym.
		if dw := b.loadDWARF(); dw != nil && dw.ef != nil && dw.ef != b.ef {
			_ = safely(func() error {
				// First: it is the table whose order decides
				// between aliases perf cannot rank (lessAlias).
				var debug []rawSym
				debug, _ = appendSymtabOf(debug, dw.ef, objects)
				raw = append(debug, raw...)
				return nil
			})
		}
	}
	if len(raw) == 0 && firstErr != nil {
		return nil, firstErr
	}
	if firstErr != nil {
		b.warn("%v (symbols of that table not used)", firstErr)
	}
	return buildSymTable(raw), nil
}

// appendELFSyms appends the code symbols of one ELF symbol table of ef,
// whose section headers say which sections hold code (a MiniDebugInfo or
// separate debug file keeps the headers of the binary as NOBITS, with the
// same addresses and flags). A missing table (nil syms) is not an error.
// names copies the names kept when they are views of a string table (nil:
// they are kept as they are).
func appendELFSyms(raw []rawSym, ef *elf.File, syms []elf.Symbol, names *nameCopier) []rawSym {
	return appendELFSymsOf(raw, ef, syms, names, false)
}

// appendELFSymsOf is appendELFSyms keeping the data objects too when
// objects is set.
func appendELFSymsOf(raw []rawSym, ef *elf.File, syms []elf.Symbol, names *nameCopier, objects bool) []rawSym {
	a := symAdder{ef: ef, rel: ef.Type == elf.ET_REL, names: names, objects: objects}
	for i := range syms {
		raw = a.add(raw, &syms[i])
	}
	return raw
}

// symAdder keeps the code symbols of one ELF symbol table, in order.
type symAdder struct {
	ef   *elf.File
	rel  bool
	file string // the last STT_FILE symbol's name
	// objects: data objects (STT_OBJECT in an allocated section) are
	// kept too, as perf keeps them in the one table it names code and
	// data addresses with (elf_sym__filter in
	// tools/perf/util/symbol-elf.c).
	objects bool
	// names copies the names given to add, views of a table read for
	// the occasion, when kept; nil when they are copies already.
	names *nameCopier
}

// add appends s to raw if it is a code symbol.
func (a *symAdder) add(raw []rawSym, s *elf.Symbol) []rawSym {
	ef := a.ef
	typ := elf.ST_TYPE(s.Info)
	bind := elf.ST_BIND(s.Info)
	if typ == elf.STT_FILE {
		// Local symbols after an STT_FILE symbol belong to that
		// source file (ELF gABI); addr2line and llvm-symbolizer
		// print it for them when there is no line table.
		a.file = a.keep(s.Name)
		return raw
	}
	if s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE || s.Name == "" {
		return raw
	}
	if int(s.Section) >= len(ef.Sections) {
		return raw
	}
	sec := ef.Sections[s.Section]
	exec := sec.Flags&elf.SHF_EXECINSTR != 0
	if isMappingSymbol(s.Name) {
		return raw
	}
	switch typ {
	case elf.STT_FUNC, elf.STT_GNU_IFUNC:
	case elf.STT_OBJECT:
		if !a.objects || a.rel || sec.Flags&elf.SHF_ALLOC == 0 {
			return raw
		}
	case elf.STT_NOTYPE:
		// Labels: assembly entry points without .type, local or
		// global, such as _start and _dl_start_user in ld.so.
		// perf keeps an untyped, named, defined symbol that is
		// not hidden or internal when its section is code
		// (elf_sym__is_label and its use in dso__load_sym,
		// tools/perf/util/symbol-elf.c); the section test is
		// below.
		switch elf.ST_VISIBILITY(s.Other) {
		case elf.STV_HIDDEN, elf.STV_INTERNAL:
			return raw
		}
	default:
		return raw
	}
	if !exec && !a.dataSection(typ, sec) {
		return raw
	}
	if a.rel && sec.Name != ".text" {
		// Kernel modules are ET_REL: addresses are .text offsets
		// (see Binary.Bias), so only .text symbols are placed.
		return raw
	}
	v := s.Value
	if a.rel {
		v += sec.Addr
	}
	if v == 0 && !a.rel {
		return raw
	}
	return append(raw, rawSym{
		value: v,
		size:  s.Size,
		name:  a.keep(s.Name),
		rank:  aliasRank(bind, typ, s.Size),
		limit: sec.Addr + sec.Size,
		file:  fileIfLocal(a.file, bind),
	})
}

// dataSection reports whether a symbol of type typ in sec, which is not
// code, is kept for naming data: a data object wherever it lies, a label
// in a section whose name says data (_edata), as perf's dso__load_sym
// keeps them (elf_sym__filter, elf_sec__filter).
func (a *symAdder) dataSection(typ elf.SymType, sec *elf.Section) bool {
	return a.objects && (typ == elf.STT_OBJECT || typ == elf.STT_NOTYPE && strings.Contains(sec.Name, "data"))
}

func (a *symAdder) keep(name string) string {
	if a.names != nil {
		return a.names.keep(name)
	}
	return name
}

// isMappingSymbol reports whether name is an ARM, AArch64 or RISC-V
// mapping symbol ($a, $d, $t, $x, optionally followed by "." and more),
// which marks where code or data starts and names no function. perf drops
// them on ARM and AArch64 (dso__load_sym); RISC-V's psABI defines the same
// $x and $d, so they are dropped on every architecture.
func isMappingSymbol(name string) bool {
	return len(name) >= 2 && name[0] == '$' && strings.IndexByte("adtx", name[1]) >= 0 &&
		(len(name) == 2 || name[2] == '.')
}

func fileIfLocal(file string, bind elf.SymBind) string {
	if bind == elf.STB_LOCAL {
		return file
	}
	return ""
}
