package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/unwind"
)

// unwindUser recovers the user frames of a stack copy (unwind.Walk) and
// appends their addresses to out (leaf first). It stops at the first
// frame whose binary is not proven to be the one that ran (cfiFor):
// unwinding with a replaced file's CFI would invent callers.
//
// unproven reports that the walk stopped at a binary that could not be
// proven, rather than at the end of the stack, of the copy or of the CFI.
func (s *session) unwindUser(pid uint32, u *unwind.UserStack, out []uint64) (_ []uint64, unproven bool) {
	out = unwind.Walk(u, func(pc uint64) (*unwind.Table, uint64) {
		m := s.tracker.Lookup(pid, perfdata.CPUModeUser, pc)
		if m == nil || m.Kind != dso.File && m.Kind != dso.VDSO {
			return nil, 0
		}
		d := s.dsoOf(m)
		t := s.cfiFor(d)
		if t == nil {
			if !s.replaying {
				d.unwindStops++
			}
			unproven = true
			return nil, 0
		}
		return t, m.Offset(pc)
	}, out)
	return out, unproven
}

// cfiFor returns the CFI to unwind through d, or nil (d.cfiWhy then says
// why). Only the CFI of a binary proven to be the one that ran is used,
// wherever it was found: unwinding with another build's tables would
// invent callers. (perf reads them through dso__data_fd: its build-id
// cache when it holds the DSO, else whatever file is at the path, its
// build-id unchecked — try_to_open_dso in tools/perf/util/dso.c — and
// walks on.)
//
// The proof is the one the verdict uses (judge), so that unwinding and
// naming never disagree about which file ran:
//   - a build-id recorded for the mapping (MMAP2 with --buildid-mmap, or the
//     one entry the header's table holds for the path): the binary the
//     locator finds by it, in perf's build-id cache, a debug directory,
//     debuginfod or at the path, each verified by build-id before it is
//     returned. The file at the path is never taken on its word: after a
//     deploy it is another build, and the cached copy is the one that ran.
//   - no build-id: the file at the path, when it is the same device and
//     inode as MMAP2 recorded and was not modified after it was mapped
//     (modifiedAfterMapped, judge's rule for Replaced).
//
// Unwinding runs while the records are read, before the verdicts, so it
// asks the locator itself and keeps the answer on d for judge to reuse (one
// lookup per DSO, one debuginfod download); it reads the files at the
// paths through the session's states, as judge does, so both weigh the
// same look at each file.
func (s *session) cfiFor(d *DSO) *unwind.Table {
	if d.cfiRead {
		return d.cfi
	}
	d.cfiRead = true
	var paths []string
	paths, d.cfiWhy = s.cfiFiles(d)
	if d.cfiWhy != "" {
		return nil
	}
	var errs []string
	for _, p := range paths {
		t, err := readCFI(p, d.cfiQuery) // the build-id cfiFiles looked for, nil without one
		if err == nil {
			d.cfi = t
			return t
		}
		errs = append(errs, changed(err).Error())
	}
	d.cfiWhy = "the binary that ran has no usable unwind tables (" + strings.Join(errs, "; ") + ")"
	return nil
}

// readCFI reads the unwind tables of the file at p, which must carry the
// build-id want when it is not nil; "[vdso]" is the running vdso, which is
// only in memory.
func readCFI(p string, want buildid.ID) (*unwind.Table, error) {
	if p == "[vdso]" {
		tmp, cleanup, err := runningVDSOFile(want)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		p = tmp
	}
	return unwind.ReadTable(p, want)
}

// cfiFiles returns the files proven to hold the code of d as it ran, best
// first, or why there are none.
func (s *session) cfiFiles(d *DSO) ([]string, string) {
	o := &s.opts
	id := d.BuildID // MMAP2's
	if len(id) == 0 && d.Kind == dso.VDSO && len(s.tableBuildIDs(d.Path)) == 0 {
		// No build-id for the vdso: the running one stands for it when
		// the recording was made on this kernel (judgeVDSOWithoutBuildID).
		var why string
		if id, why = s.runningVDSO(); id == nil {
			return nil, "no build-id recorded for the vdso, and " + why
		}
	}
	if len(id) == 0 {
		ids := s.tableBuildIDs(d.Path)
		switch {
		case len(ids) > 1:
			return nil, manyBuildIDs(len(ids))
		case len(ids) == 1:
			if why := s.replacedSoFar(d, ids[0]); why != "" {
				return nil, why
			}
			id = ids[0]
		}
	}
	if len(id) > 0 {
		q := buildidcache.Query{Path: d.Path, Kind: d.Kind, BuildID: id, PID: s.queryPID(d)}
		// The context of the Analyze reading the records, so that
		// cancelling it cuts a debuginfod download short; a session fed
		// without one (a test) has none, and a locator bounds its own network waits
		// (buildidcache's debuginfod client has timeouts).
		ctx := s.unwindCtx
		if ctx == nil {
			ctx = context.Background()
		}
		found, err := s.opts.locator.Locate(ctx, q)
		d.cfiQuery, d.cfiFound, d.cfiErr = id, found, err
		if err != nil {
			return nil, "no binary with its build-id " + id.String() + " was found, so its unwind tables are not the ones that ran (" + err.Error() + ")"
		}
		// The identity file first; a separate debug file (the richest
		// symbol source) has its .eh_frame stripped to NOBITS by
		// objcopy --only-keep-debug, so it serves only when it is the
		// whole binary (debuginfod serves an unstripped one as both).
		var out []string
		for _, p := range []string{found.Identity.Path, symbolFile(found)} {
			if p != "" && p != "/proc/kallsyms" && !slices.Contains(out, p) {
				// "[vdso]" is the running vdso (readCFI).
				out = append(out, p)
			}
		}
		if disk := o.diskPath(d.Path); !slices.Contains(out, disk) {
			if st := s.states.get(disk); st.Exists && st.BuildID.Matches(id) {
				out = append(out, disk)
			}
		}
		return out, ""
	}
	if d.Dev == nil || o.Lookup.SymFS != "" {
		return nil, "no build-id recorded for it and no device/inode that ties the file at the path to the mapping"
	}
	ev := s.pathEvidence(d)
	st := ev.st
	switch {
	case !st.Exists:
		return nil, "no build-id recorded for it and no file at the path"
	case ev.inode != inodeSame:
		// Unlike judge, which calls a file on another device Unverified
		// (nothing shows it changed), unwinding wants proof that the file
		// is the one that ran, and another device is none: tables of
		// another build would invent callers that no verdict flags.
		return nil, fmt.Sprintf("no build-id recorded for it, and the file at the path is not the device and inode that ran (%d:%d %d recorded, %d:%d %d now)",
			d.Dev.Maj, d.Dev.Min, d.Dev.Ino, st.Maj, st.Min, st.Ino)
	case ev.modified != "":
		// The rule judge applies for the verdict (Replaced).
		return nil, "no build-id recorded for it, and " + ev.modified
	}
	return []string{ev.path}, ""
}

// tableBuildIDs returns the distinct non-zero build-ids the header's table
// holds for a user path (a zero one is perf 6.1's placeholder in pipe mode
// and with -z: no identity).
func (s *session) tableBuildIDs(path string) []buildid.ID {
	var ids []buildid.ID
	for _, e := range s.buildIDs {
		if e.Filename != path || e.BuildID.IsZero() {
			continue
		}
		switch e.CPUMode {
		case perfdata.CPUModeUser, perfdata.CPUModeUnknown, perfdata.CPUModeHypervisor:
		default:
			continue
		}
		dup := false
		for _, b := range ids {
			dup = dup || b.Matches(e.BuildID)
		}
		if !dup {
			ids = append(ids, e.BuildID)
		}
	}
	return ids
}

// replacedSoFar says why the header's build-id id may not describe d, as
// far as the records read until now show: perf reads the table's build-ids
// from the files on disk when the recording ends, so a file replaced while
// recording is described by its replacement. It applies, early, the
// evidence replacedDuringRecording weighs at the end: the path already
// mapped as another inode, or a file now at the path that is another inode
// with id, written after d was mapped and before the recording ended.
// Mappings read later cannot be foreseen; if they prove the replacement,
// d's verdict says so and every stack through d is untrusted.
func (s *session) replacedSoFar(d *DSO, id buildid.ID) string {
	if d.Dev == nil {
		return ""
	}
	o := &s.opts
	var st *fileState
	if o.Lookup.SymFS == "" {
		st = s.states.get(o.diskPath(d.Path))
	}
	for _, p := range s.dsos {
		if p != d && p.Kind == dso.File && p.Path == d.Path && p.Dev != nil && d.Dev.compare(*p.Dev) != inodeSame {
			if st != nil && d.Dev.now(st) == inodeSame && st.BuildID.Matches(id) {
				// This inode is the file at the path now, whose
				// build-id the table holds (as judge concludes).
				return ""
			}
			return fmt.Sprintf("the file at this path changed during the recording (mapped as inodes %d and %d): the header's build-id, read when the recording ended, may describe the other one", d.Dev.Ino, p.Dev.Ino)
		}
	}
	if st == nil {
		return ""
	}
	if s.rec.replacedAfterMapped(d, id, st) {
		return "the file was replaced during the recording (another inode, written after it was mapped and before the recording ended): the header's build-id describes the replacement"
	}
	return ""
}

// streamBuildID takes a HEADER_BUILD_ID record met while reading a stream
// (perf inject -b writes one before the first sample in each DSO; older
// perf wrote them all at the end): from now on it proves its binary for
// unwinding as the table of a file does. A DSO already decided keeps its
// decision: every walk through it, in this reading and in a replay
// (EachSample), then stops or goes on alike.
func (s *session) streamBuildID(e perfdata.BuildIDEntry) {
	s.addBuildIDs([]perfdata.BuildIDEntry{e})
}

// unwindContext makes ctx the one cfiFor's lookups run under until the
// returned function is called (feed: defer s.unwindContext(ctx)()).
func (s *session) unwindContext(ctx context.Context) func() {
	s.unwindCtx = ctx
	return func() { s.unwindCtx = nil }
}

// isContextErr reports whether err is a cancellation or deadline rather
// than an answer: such a lookup made while unwinding is not reused by
// judge, whose own context may still allow it.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
