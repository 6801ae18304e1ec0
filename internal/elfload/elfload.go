// Package elfload describes the PT_LOAD segments of an ELF file and turns
// a file offset into the ELF virtual address that the file's symbol and
// unwind tables use. The symbolizer and the unwinder both need it, and
// neither may depend on the other.
package elfload

import "debug/elf"

// Segment is a PT_LOAD segment of an ELF file: Filesz bytes at file offset
// Off, loaded at address Vaddr; Exec when it is executable (PF_X).
type Segment struct {
	Off, Filesz, Vaddr uint64
	Exec               bool
}

// Of returns the segment that program header p describes.
func Of(p *elf.ProgHeader) Segment {
	return Segment{Off: p.Off, Filesz: p.Filesz, Vaddr: p.Vaddr, Exec: p.Flags&elf.PF_X != 0}
}

// Addr returns the ELF address of file offset off: the first of segs
// that holds the offset gives vaddr - offset (as perf's
// map__rip_2objdump and pprof's elfexec.GetBase do for a mapping's load
// bias); false when none does. The caller orders segs by preference,
// since segments may share a file page.
func Addr(segs []Segment, off uint64) (uint64, bool) {
	for _, s := range segs {
		if off >= s.Off && off < s.Off+s.Filesz {
			return off - s.Off + s.Vaddr, true
		}
	}
	return 0, false
}
