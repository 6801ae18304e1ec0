package check

import (
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/symbolize"
)

// openDSO opens d's symbol file with opener. File offsets become ELF
// addresses through the program headers, and a separate debug file (perf's
// cache keeps one as .build-id/xx/…/debug beside the binary; debug
// directories and debuginfod hold .debug files) has unusable ones:
// objcopy --only-keep-debug leaves its PT_LOAD segments with p_offset 0 and
// p_filesz 0, so no offset falls in them and every frame of the DSO would
// go unnamed (ld.so's, found through perf's cache, in every fixture). The
// segments of a file with the same build-id that holds the code — the
// binary that proved the identity, or the file at the recorded path when
// it has the recorded build-id — give the mapping instead; the debug
// file still gives the names.
func openDSO(opener symbolOpener, d *DSO, opts *Options) (symbolLookup, error) {
	lk, err := opener.Open(d.symPath, d.Kind)
	if err != nil {
		return nil, err
	}
	sl, ok := lk.(*symLookup)
	if !ok || !sl.fileOffsets || loadsHoldCode(sl.loads) {
		return lk, nil
	}
	for _, p := range codeFileCandidates(d, opts) {
		// Checked on open, as CFI and module symbols are: a candidate
		// can be replaced between the lookup and this read.
		loads, err := readLoads(p, d.BuildID)
		if err == nil && loadsHoldCode(loads) {
			sl.loads = loads
			break
		}
	}
	return lk, nil
}

// loadsHoldCode reports whether an executable segment has file bytes: false
// for a separate debug file's program headers.
func loadsHoldCode(loads []symbolize.Segment) bool {
	// readLoads lists executable segments first.
	return len(loads) > 0 && loads[0].Filesz > 0
}

// codeFileCandidates are the files whose program headers may stand for
// d's: the file that proved its identity, then the file at the recorded
// path when it carries the same build-id.
func codeFileCandidates(d *DSO, opts *Options) []string {
	var out []string
	if d.FoundPath != "" && d.FoundPath != d.symPath {
		out = append(out, d.FoundPath)
	}
	if d.Kind == dso.File && len(d.BuildID) > 0 {
		disk := opts.diskPath(d.Path)
		if disk != d.symPath && disk != d.FoundPath {
			// Matches allows for perf's zero padding to 20 bytes.
			if id, err := buildidcache.ReadFileIdentity(disk); err == nil && id.BuildID.Matches(d.BuildID) {
				out = append(out, disk)
			}
		}
	}
	return out
}
