package check

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/elfload"
	"github.com/perfcheck/perfcheck/symbolize"
)

// symbolOpener opens the file a verified (or unverified) DSO is symbolized
// with. The default uses the symbolize package. An opener need not check
// what it opened: the check compares the build-id its lookup reports with
// the one the DSO's verdict rests on (docs/check-symbols.md).
type symbolOpener interface {
	// Open returns a lookup for path. kind tells how offsets map to the
	// file's addresses: for dso.File, dso.VDSO and dso.Module an offset is
	// a file offset; for dso.Kernel and dso.JIT it is an address.
	Open(path string, kind dso.Kind) (symbolLookup, error)
}

// symbolLookup resolves offsets of one DSO to frames, leaf first. It must
// be safe for concurrent use.
type symbolLookup interface {
	Lookup(off uint64) ([]symbolize.Frame, error)
	// BuildID returns the GNU build-id of the file the names are read
	// from, as read from that file once open (not from its path again),
	// nil when it has none (a kallsyms listing, a perf map). A file can
	// be replaced between the verdict and the open: names are used only
	// when this is the build-id the verdict rests on.
	BuildID() buildid.ID
	Close() error
}

// symOffsetter is a symbolLookup that also knows where the symbol-table
// entry covering an offset starts (perf script's symoff).
type symOffsetter interface {
	symOffset(off uint64) (uint64, bool)
}

// dataSymboler is a symbolLookup that also names data addresses, as perf
// names a page fault's address from the code and data symbols together:
// the name as stored, and how far off lies past its start.
type dataSymboler interface {
	dataSymbol(off uint64) (name string, symOff uint64, ok bool)
}

// defaultOpener symbolizes with the symbolize package.
// defaultOpener symbolizes with the symbolize package.
type defaultOpener struct {
	// debug, when set, is the lookup whose debug directories (and
	// SymFS) hold separate debug files: the check's, so that
	// --debug-dir and --symfs hold for them too. nil means symbolize's
	// default, /usr/lib/debug.
	debug *buildidcache.Resolver
}

// opener is the check's symbolOpener: the test's, else the symbolize
// package's, finding separate debug files where the lookup does.
func (o *Options) opener() symbolOpener {
	if o.symbolizer != nil {
		return o.symbolizer
	}
	return defaultOpener{debug: o.debugFiles}
}

func (o defaultOpener) Open(path string, kind dso.Kind) (symbolLookup, error) {
	b, err := o.openBinary(path, kind)
	if err != nil {
		return nil, err
	}
	l := &symLookup{bin: b}
	if kind == dso.File || kind == dso.VDSO || kind == dso.Module {
		if b.Format() != symbolize.FormatELF {
			b.Close()
			return nil, fmt.Errorf("%s: not an ELF file", path)
		}
		// The program headers of the file symbolize opened, whose
		// build-id proveLookup checks: not of a file put at the path
		// since.
		l.loads = loadOrder(b.Segments())
		if len(l.loads) == 0 {
			b.Close()
			return nil, fmt.Errorf("%s: no PT_LOAD segment", path)
		}
		l.fileOffsets = true
	}
	return l, nil
}

// openBinary opens path with symbolize: this boot's /proc/kallsyms, for a
// kernel, from the listing symbolize parses once per process.
func (o defaultOpener) openBinary(path string, kind dso.Kind) (*symbolize.Binary, error) {
	var opts symbolize.Options
	if o.debug != nil {
		opts.DebugFile = func(q symbolize.DebugQuery) (string, error) {
			return o.debug.DebugFile(q.Path, q.BuildID, q.DebugLink)
		}
	}
	if kind == dso.Kernel && path == "/proc/kallsyms" {
		return symbolize.OpenRunningKernel(opts)
	}
	return symbolize.Open(path, opts)
}

// proveLookup reports a *changedError unless lk reads names from a file
// with the build-id d's verdict rests on. The file at a verified path can be
// replaced between the lookup that verified it and the open for names
// (seconds or minutes on a large recording, or a file opened ahead: a
// deploy), and an opener, the default or a caller's, is not relied on to
// check: the build-id the lookup read from the file it opened is compared
// here.
//
//   - verified: the recorded build-id (or its zero-padded form, as perf
//     before 5.9 stored it). A kernel symbolized from a kallsyms listing
//     has none to read: this boot's /proc/kallsyms is proven by the
//     running kernel's build-id (/sys/kernel/notes), which cannot change
//     without a reboot, a copy in perf's cache by the build-id it is filed
//     under. An ELF file (vmlinux) must carry it.
//   - otherwise (unverified, or named anyway under TrustPaths): the
//     build-id of the file the verdict examined at the path, or none when
//     it had none. A file without a build-id replaced by another without
//     one is not seen here (its device, inode and mtime were the
//     evidence).
func (d *DSO) proveLookup(lk symbolLookup) error {
	got := lk.BuildID()
	where := d.symPath
	if d.modNames == "kallsyms" {
		where = "module " + moduleName(d.Path) + " loaded now"
	}
	if d.Verdict != Verified {
		if !bytes.Equal(got, d.FoundBuildID) {
			return &changedError{path: where, got: got, want: d.FoundBuildID}
		}
		return nil
	}
	if len(got) == 0 && d.Kind == dso.Kernel {
		if sl, ok := lk.(*symLookup); !ok || sl.bin.Format() == symbolize.FormatKallsyms {
			return nil
		}
	}
	return wantBuildID(where, got, d.BuildID)
}

// refuseLookup records why d gets no names from the lookup it was opened
// with. A file that changed since its verdict was given (changedError)
// changes the verdict as a file found changed at judging time would: a
// verified DSO becomes mismatch (a build-id was recorded, the file now
// has another), an unverified one replaced (no build-id recorded, and
// evidence of change). Its frames then stay dso+0xoffset, untrusted.
// Any other error is a symbolization failure (SymbolError). host is where
// a loaded module's build-id was read.
func (d *DSO) refuseLookup(err error, host hostRoots) {
	d.Err = err
	var ce *changedError
	if !errors.As(err, &ce) {
		d.SymbolError = err.Error()
		return
	}
	opened := d.symPath
	if d.modNames == "kallsyms" {
		// The build-id that changed is the loaded module's.
		opened = host.moduleDir(moduleName(d.Path))
	}
	d.symPath = ""
	d.modNames = ""
	switch d.Verdict {
	case Verified:
		d.Verdict = Mismatch
		d.Reason = "build-id " + d.BuildID.String() + " was found (" + d.Source + "), but the file then opened for its names is not it (" + err.Error() + "): left unsymbolized"
		d.Source = ""
		d.FoundPath, d.FoundBuildID = opened, ce.got
		d.advice = "the binary was replaced while perfcheck ran: run it again, and keep binaries by build-id at record time (`perfcheck cache fill perf.data`)"
	case Unverified:
		d.Verdict = Replaced
		d.Source = ""
		d.Reason = "no build-id recorded; the file at the path changed while perfcheck ran (" + err.Error() + "): left unsymbolized"
		d.FoundBuildID = ce.got
		d.advice = "record with perf record --buildid-mmap, or run `perfcheck cache fill` at record time"
	default:
		d.SymbolError = err.Error()
	}
}

// loadOrder lists segs executable ones first: an offset in two segments
// (they may share a page) belongs to the code (elfload.Addr takes the
// first). The unwinder keeps only the executable ones, as its tables
// describe code alone; a symbol may name data.
func loadOrder(segs []symbolize.Segment) []symbolize.Segment {
	var out []symbolize.Segment
	for _, exec := range []bool{true, false} {
		for _, s := range segs {
			if s.Exec == exec {
				out = append(out, s)
			}
		}
	}
	return out
}

type symLookup struct {
	bin         *symbolize.Binary
	loads       []symbolize.Segment
	fileOffsets bool
}

// errNoSegment means a file offset is in no PT_LOAD segment.
var errNoSegment = errors.New("offset in no PT_LOAD segment")

func (l *symLookup) Lookup(off uint64) ([]symbolize.Frame, error) {
	addr := off
	if l.fileOffsets {
		var ok bool
		if addr, ok = elfload.Addr(l.loads, off); !ok {
			return nil, errNoSegment
		}
	}
	fr, err := l.bin.Frames(addr, nil)
	if err != nil {
		return nil, err
	}
	return fr, nil
}

// symOffset implements symOffsetter: the offset from the start of the
// symbol-table entry that covers off, as perf computes symoff from its
// symbol's start (whatever name DWARF gives the function).
func (l *symLookup) symOffset(off uint64) (uint64, bool) {
	addr := off
	if l.fileOffsets {
		var ok bool
		if addr, ok = elfload.Addr(l.loads, off); !ok {
			return 0, false
		}
	}
	_, start, _, ok := l.bin.Symbol(addr)
	if !ok || start > addr {
		return 0, false
	}
	return addr - start, true
}

func (l *symLookup) Close() error { return l.bin.Close() }

// BuildID implements symbolLookup: the build-id symbolize read from the
// file it opened.
func (l *symLookup) BuildID() buildid.ID { return l.bin.BuildID() }

// readLoads returns the PT_LOAD segments of the ELF file at path,
// executable ones first (loadOrder). With want, the file must carry that
// build-id, checked on the file whose headers are read.
func readLoads(path string, want buildid.ID) ([]symbolize.Segment, error) {
	segs, err := symbolize.ReadSegments(path, want)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("%s: no PT_LOAD segment", path)
	}
	return loadOrder(segs), nil
}

// wantBuildID reports a *changedError unless id, the build-id read from
// the file at path once open, is want (or its zero-padded form).
func wantBuildID(path string, id, want buildid.ID) error {
	if len(id) == 0 || !id.Matches(want) {
		return &changedError{path: path, got: id, want: want}
	}
	return nil
}

// changedError means a file opened to be read is not the one a verdict
// (or the lookup before it) examined at the same path: its build-id is got,
// not want (nil: none).
type changedError struct {
	path      string
	got, want buildid.ID
}

func (e *changedError) Error() string {
	switch {
	case len(e.want) == 0:
		return fmt.Sprintf("%s: build-id %s, none when its verdict was given: the file changed since", e.path, e.got)
	case len(e.got) == 0:
		return fmt.Sprintf("%s: no build-id, not %s: the file changed since it was found", e.path, e.want)
	}
	return fmt.Sprintf("%s: build-id %s, not %s: the file changed since it was found", e.path, e.got, e.want)
}

// changed reads a reader's *buildidcache.MismatchError (the file at a
// path found by build-id carried another one once opened) as the check
// sees it: a *changedError. Other errors are returned as they are.
func changed(err error) error {
	var me *buildidcache.MismatchError
	if errors.As(err, &me) {
		return &changedError{path: me.File, got: me.Got, want: me.Want}
	}
	return err
}

// dataSymbol implements dataSymboler for ELF files, from the code and data
// symbols together (symbolize.Binary.DataSymbol).
func (l *symLookup) dataSymbol(off uint64) (name string, symOff uint64, ok bool) {
	addr := off
	if l.fileOffsets {
		if addr, ok = dataAddr(l.loads, off); !ok {
			return "", 0, false
		}
	}
	name, start, ok := l.bin.DataSymbol(addr)
	if !ok || start > addr {
		return "", 0, false
	}
	return name, addr - start, true
}

// dataAddr is elfload.Addr for an address of data: an offset past every
// segment's file bytes still lies in the last page a segment's mapping
// reads from the file, where its zeroed data (.bss) begins, at the ELF
// address that follows the segment's bytes. perf names it so: it moves
// every symbol to the file offset of the segment holding it
// (dso__load_sym in tools/perf/util/symbol-elf.c).
func dataAddr(segs []symbolize.Segment, off uint64) (uint64, bool) {
	if a, ok := elfload.Addr(segs, off); ok {
		return a, true
	}
	var best *symbolize.Segment
	for i := range segs {
		s := &segs[i]
		if s.Off <= off && (best == nil || s.Off > best.Off) {
			best = s
		}
	}
	if best == nil || off >= (best.Off+best.Filesz+pageSize-1)&^(pageSize-1) {
		return 0, false
	}
	return off - best.Off + best.Vaddr, true
}

// pageSize is the page the last file page of a segment's mapping is
// rounded to (4 KiB: on larger pages, what lies past it goes unnamed).
const pageSize = 4096
