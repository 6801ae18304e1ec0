package symbolize

import (
	"debug/elf"
	"fmt"
	"strings"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/dso"
)

// Bias returns the load bias of the binary in mapping m: a runtime address
// a in m is the file address a - bias (uint64 arithmetic wraps, so a bias
// that is "negative" works too). Compute it once per mapping. Bias reads
// m's Start, Limit and Pgoff, and its Kind and Path for the kernel's map.
//
// For an ELF executable or library it comes from the PT_LOAD segment that
// holds file offset m.Pgoff: file address = a - Start + Pgoff - p_offset +
// p_vaddr. That one rule is right for non-PIE executables (bias 0), PIE and
// shared libraries (any number of segments, whichever of them m maps),
// prelinked and non-zero-based objects and the vdso. For vmlinux in the
// kernel's map (Kind dso.Kernel) it is the KASLR slide: there Pgoff is not
// a file offset but the runtime address of the symbol the map's name
// follows ("[kernel.kallsyms]_text": _text), as
// perf_event__synthesize_kernel_mmap in tools/perf/util/synthetic-events.c
// writes it, and the bias is Pgoff minus the file's address of that symbol
// (_text, else _stext, when the name has none). For a kernel module
// (ET_REL) the mapping starts at the module's .text, as perf places it,
// and file addresses are .text offsets. kallsyms and perf maps hold
// runtime addresses: their bias is 0.
//
// It is not elfload.Addr of one offset, as the check and the unwinder
// use: it picks the segment of a whole mapping, which may start in a
// page shared by two segments, by page alignment and size (segmentFor),
// so it reads p_align and p_memsz, which a Segment does not carry.
func (b *Binary) Bias(m addrspace.Mapping) (uint64, error) {
	if b.format != FormatELF {
		return 0, nil
	}
	if m.Kind == dso.Kernel {
		return b.kernelBias(m)
	}
	if b.ef.Type == elf.ET_REL {
		return m.Start, nil
	}
	if p := b.segmentFor(m); p != nil {
		return m.Start - m.Pgoff + p.Off - p.Vaddr, nil
	}
	if len(b.loads) == 0 {
		return m.Start - m.Pgoff, nil
	}
	return 0, fmt.Errorf("%s: %w: offset %#x", b.path, ErrNoMapping, m.Pgoff)
}

// kernelBias is Bias for the kernel's map: the KASLR slide.
func (b *Binary) kernelBias(m addrspace.Mapping) (uint64, error) {
	if m.Pgoff == 0 {
		return 0, nil
	}
	names := []string{"_text", "_stext"}
	if i := strings.IndexByte(m.Path, ']'); i >= 0 && i+1 < len(m.Path) {
		names = []string{m.Path[i+1:]}
	}
	for _, name := range names {
		if v, ok := b.symbolValue(name); ok {
			return m.Pgoff - v, nil
		}
	}
	return 0, fmt.Errorf("%s: %w: kernel image has no %v symbol", b.path, ErrNoMapping, names)
}

// segmentFor returns the PT_LOAD that mapping m maps. Several segments can
// cover m.Pgoff, since segments may share a file page (the kernel maps the
// shared page twice, once per segment). Then the segment that starts in the
// mapping's first page wins over one that only runs into it, and among
// those the one whose extent best matches the mapping's size, as the kernel
// sizes each mapping from its segment (load_elf_binary in fs/binfmt_elf.c).
func (b *Binary) segmentFor(m addrspace.Mapping) *elf.ProgHeader {
	var best *elf.ProgHeader
	bestScore := uint64(0)
	for i := range b.loads {
		p := &b.loads[i]
		page := pageSize(p.Align)
		lo := p.Off &^ (page - 1)
		if !(lo <= m.Pgoff && m.Pgoff < p.Off+max(p.Filesz, 1)) {
			continue
		}
		// Lower is better: 0 for a segment starting in the mapping's
		// first page, then the size mismatch.
		var score uint64
		if lo != m.Pgoff {
			score = 1 << 62
		}
		if m.Limit > m.Start {
			span := (p.Vaddr&(page-1) + p.Memsz + page - 1) &^ (page - 1)
			size := m.Limit - m.Start
			if span > size {
				score += span - size
			} else {
				score += size - span
			}
		}
		if best == nil || score < bestScore {
			best, bestScore = p, score
		}
	}
	return best
}

func pageSize(align uint64) uint64 {
	if align >= 4096 && align&(align-1) == 0 {
		return 4096
	}
	return 1
}

// symbolValue finds a symbol's value in .symtab (then .dynsym) by name;
// .symtab through the package's symbolValue, which does not decode the
// whole table.
func (b *Binary) symbolValue(name string) (uint64, bool) {
	var v uint64
	var found bool
	_ = safely(func() error {
		if v, found = symbolValue(b.ef, name); found {
			return nil
		}
		t, err := readSymTable(b.ef, elf.SHT_DYNSYM)
		if err != nil {
			return nil
		}
		for i := range t.n {
			if s := t.at(i); s.Name == name {
				v, found = s.Value, true
				return nil
			}
		}
		return nil
	})
	return v, found
}
