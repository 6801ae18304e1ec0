package check

import (
	"debug/elf"
	"strings"

	"github.com/perfcheck/perfcheck/dso"
)

// segment is an executable PT_LOAD segment of a binary: its file offset
// and size in the file.
type segment struct{ off, filesz uint64 }

// execSegments reads the executable segments of the binary found for each
// trusted file or vdso DSO the locations are in: what a pprof profile needs
// to lay out a mapping where the recording gives none (ExecSegment). A
// binary that cannot be read only goes without. A module (a relocatable
// object) has no segments, nor has this boot's /proc/kallsyms.
func execSegments(locs []*Location) map[*DSO][]segment {
	segs := map[*DSO][]segment{}
	for _, l := range locs {
		d := l.DSO
		if _, done := segs[d]; done {
			continue
		}
		segs[d] = nil
		switch d.Kind {
		case dso.File, dso.VDSO:
		default:
			continue
		}
		if !d.Trusted() || d.FoundPath == "" || strings.HasPrefix(d.FoundPath, "/proc/") {
			continue
		}
		readELF(d.FoundPath, nil, func(ef *elf.File) error {
			for _, l := range elfLoads(ef, true) {
				segs[d] = append(segs[d], segment{off: l.off, filesz: l.filesz})
			}
			return nil
		})
	}
	return segs
}

// ExecSegment returns the file offset at which the executable segment
// (PT_LOAD) that holds file offset off begins in the binary found for d:
// the offset at which the loader mapped the code at off, as the
// recording's MMAP pgoff would show it. It knows only files and vdsos
// that are trusted and whose binary was found and could be read; false
// otherwise, or when no executable segment holds off.
func (r *Result) ExecSegment(d *DSO, off uint64) (uint64, bool) {
	for _, s := range r.execSegs[d] {
		if s.off <= off && off < s.off+s.filesz {
			return s.off, true
		}
	}
	return 0, false
}
