package check

import (
	"strings"
	"sync"

	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/symbolize"
)

// dsoSegments is one DSO's executable segments, read once.
type dsoSegments struct {
	once sync.Once
	segs []symbolize.Segment
}

// execSegments reads the executable segments of the binary found for d,
// when d is a trusted file or vdso: what a pprof profile needs to lay out
// a mapping where the recording gives none (ExecSegment). The file must
// still carry the build-id its verdict found (FoundBuildID): a file put at
// the path since is not the one judged, and goes without, as does a
// binary that cannot be read. A module (a relocatable object) has no
// segments, nor has this boot's /proc/kallsyms, nor the running vdso,
// whose "[vdso]" names memory, not a file.
func execSegments(d *DSO) []symbolize.Segment {
	switch d.Kind {
	case dso.File, dso.VDSO:
	default:
		return nil
	}
	if !d.Trusted() || d.FoundPath == "" || d.Source == "running-vdso" || strings.HasPrefix(d.FoundPath, "/proc/") {
		return nil
	}
	all, _ := symbolize.ReadSegments(d.FoundPath, d.FoundBuildID)
	var segs []symbolize.Segment
	for _, s := range all {
		if s.Exec {
			segs = append(segs, s)
		}
	}
	return segs
}

// segmentsOf returns d's executable segments, read on the first call for
// d; calls for other DSOs do not wait for that read.
func (r *Result) segmentsOf(d *DSO) []symbolize.Segment {
	r.segMu.Lock()
	e := r.execSegs[d]
	if e == nil {
		e = &dsoSegments{}
		if r.execSegs == nil {
			r.execSegs = map[*DSO]*dsoSegments{}
		}
		r.execSegs[d] = e
	}
	r.segMu.Unlock()
	e.once.Do(func() { e.segs = execSegments(d) })
	return e.segs
}

// readDownloadedSegments reads now the segments of the binaries debuginfod
// found: Analyze calls it before it closes a Resolver it made itself,
// which removes the files it downloaded to a scratch directory (when there
// is no debuginfod cache directory).
func (r *Result) readDownloadedSegments() {
	for _, d := range r.DSOs {
		if d.Source == "debuginfod" {
			r.segmentsOf(d)
		}
	}
}

// ExecSegment returns the file offset at which the executable segment
// (PT_LOAD) that holds file offset off begins in the binary found for d:
// the offset at which the loader mapped the code at off, as the
// recording's MMAP pgoff would show it. It knows only files and vdsos
// that are trusted and whose binary was found, still carries the build-id
// found for it (DSO.FoundBuildID) and could be read; false otherwise, or
// when no executable segment holds off.
//
// Only pprof output needs it, so the binary is read on the first call for
// d (and its segments kept): the check itself opens nothing for it, except
// where Analyze made its own Resolver (Options.Resolver nil) and a binary
// was downloaded by debuginfod, whose segments are read before that
// Resolver is closed. A binary downloaded to a scratch directory
// (debuginfod without a cache directory) by a caller's Resolver is gone
// once that Resolver is closed: close it after the last call. It is safe
// for concurrent use.
func (r *Result) ExecSegment(d *DSO, off uint64) (uint64, bool) {
	for _, s := range r.segmentsOf(d) {
		if s.Off <= off && off < s.Off+s.Filesz {
			return s.Off, true
		}
	}
	return 0, false
}
