package check

import (
	"debug/elf"
	"strings"

	"github.com/perfcheck/perfcheck/dso"
)

// segment is an executable PT_LOAD segment of a binary: its file offset
// and size in the file.
type segment struct{ off, filesz uint64 }

// execSegments reads the executable segments of the binary found for d,
// when d is a trusted file or vdso: what a pprof profile needs to lay out
// a mapping where the recording gives none (ExecSegment). A binary that
// cannot be read only goes without. A module (a relocatable object) has
// no segments, nor has this boot's /proc/kallsyms.
func execSegments(d *DSO) []segment {
	switch d.Kind {
	case dso.File, dso.VDSO:
	default:
		return nil
	}
	if !d.Trusted() || d.FoundPath == "" || strings.HasPrefix(d.FoundPath, "/proc/") {
		return nil
	}
	var segs []segment
	readELF(d.FoundPath, nil, func(ef *elf.File) error {
		for _, l := range elfLoads(ef, true) {
			segs = append(segs, segment{off: l.off, filesz: l.filesz})
		}
		return nil
	})
	return segs
}

// ExecSegment returns the file offset at which the executable segment
// (PT_LOAD) that holds file offset off begins in the binary found for d:
// the offset at which the loader mapped the code at off, as the
// recording's MMAP pgoff would show it. It knows only files and vdsos
// that are trusted and whose binary was found and could be read; false
// otherwise, or when no executable segment holds off.
//
// Only pprof output needs it, so the binary is read on the first call for
// d (and its segments kept): the check itself opens nothing for it. A
// binary downloaded to a scratch directory (debuginfod without a cache
// directory) is gone once the Resolver that fetched it is closed: pass
// Options.Resolver and close it after the last call. It is safe for
// concurrent use.
func (r *Result) ExecSegment(d *DSO, off uint64) (uint64, bool) {
	r.segMu.Lock()
	segs, ok := r.execSegs[d]
	if !ok {
		segs = execSegments(d)
		if r.execSegs == nil {
			r.execSegs = map[*DSO][]segment{}
		}
		r.execSegs[d] = segs
	}
	r.segMu.Unlock()
	for _, s := range segs {
		if s.off <= off && off < s.off+s.filesz {
			return s.off, true
		}
	}
	return 0, false
}
