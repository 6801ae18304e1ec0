package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/symbolize"
	"github.com/perfcheck/perfcheck/unwind"
)

// DevIno is MMAP2's file identity in the dev/inode form: the device as the
// kernel's MAJOR()/MINOR(), the inode number and its generation.
type DevIno struct {
	Maj        uint32 `json:"maj"`
	Min        uint32 `json:"min"`
	Ino        uint64 `json:"ino"`
	Generation uint64 `json:"generation"`
}

// inodeMatch is how a file relates to a mapping's recorded device and
// inode.
type inodeMatch int

const (
	inodeUnknown     inodeMatch = iota // no file at the path, or no device and inode recorded
	inodeOtherDevice                   // on another device: another view of the filesystem (overlayfs, a container, NFS), or another file
	inodeSame                          // the same device and inode: the file that was mapped, maybe rewritten in place since
	inodeOther                         // the same device, another inode: another file was put at the path
)

// now compares the device and inode di recorded with st, the file at the
// mapping's path now. The inode generation is not compared: stat does not
// give it.
func (di *DevIno) now(st *fileState) inodeMatch {
	if di == nil || !st.Exists {
		return inodeUnknown
	}
	return di.compare(DevIno{Maj: st.Maj, Min: st.Min, Ino: st.Ino})
}

// compare compares the device and inode di recorded with o's, those of a
// file or of another mapping; generations are not compared.
func (di *DevIno) compare(o DevIno) inodeMatch {
	switch {
	case di.Maj != o.Maj || di.Min != o.Min:
		return inodeOtherDevice
	case di.Ino == o.Ino:
		return inodeSame
	}
	return inodeOther
}

// DSO is one binary (or pseudo binary) that mappings of the recording
// refer to, with its recorded identity, the verdict and the evidence: a
// row of Result.DSOs and of Report.DSOs, whose JSON form `perfcheck check
// --json` prints (docs/check-json.md). Mappings of the same path with
// different identities (a file that changed during the recording) are
// different DSOs.
type DSO struct {
	Path string   `json:"path"` // as recorded ("[kernel.kallsyms]", "[vdso]", a module's path, a file)
	Kind dso.Kind `json:"kind"`

	// Recorded identity.
	BuildID       buildid.ID `json:"build_id"`                  // nil when none was recorded
	BuildIDSource string     `json:"build_id_source,omitempty"` // "mmap2" (--buildid-mmap), "header" (the build-id table), "" none
	// Candidates are the build-ids the header's table holds for this path
	// when there are several and this DSO could not be tied to one.
	Candidates []buildid.ID `json:"candidate_build_ids,omitempty"`
	Dev        *DevIno      `json:"dev,omitempty"` // from MMAP2 in the dev/inode form, nil otherwise

	Verdict      Verdict    `json:"verdict"`
	Reason       string     `json:"reason"`
	Source       string     `json:"source"`                // the locator that found the binary (verified), or "path"
	FoundPath    string     `json:"found_path"`            // the file symbols come from, or the file examined at the path
	FoundBuildID buildid.ID `json:"found_build_id"`        // the build-id of the file found (verified) or now at the path
	GoBuildID    string     `json:"go_build_id,omitempty"` // the Go build-id of the file at the path, when it has one
	Rejected     []string   `json:"rejected,omitempty"`    // candidates the locator refused, with reasons
	// Tried lists the lookups that found nothing when no binary with the
	// recorded build-id was found, each "locator what" (a debuginfod
	// server's answer or its timeout among them).
	Tried []string `json:"tried,omitempty"`
	// Symbolized reports whether names are given for this DSO's frames:
	// its verdict allows them and its binary could be opened for them.
	Symbolized  bool   `json:"symbolized"`
	SymbolError string `json:"symbol_error,omitempty"` // why the binary could not be opened for symbols, "" when it could
	// Err is the error behind Reason or SymbolError, for errors.Is and
	// errors.As: the lookup's when no binary with the recorded build-id
	// was found (a *buildidcache.NotFoundError, with what was tried and
	// rejected, wrapping buildidcache.ErrNotFound) or it failed, else
	// why the binary could not be opened for symbols; nil when neither.
	Err error `json:"-"`

	HitsLeaf uint64 `json:"hits_leaf"` // samples whose leaf is in this DSO
	HitsAny  uint64 `json:"hits_any"`  // samples with a frame anywhere in this DSO (each sample once)
	// Notes are limits met with this DSO that do not change its verdict:
	// where --call-graph dwarf unwinding stopped at it and why, what the
	// symbolizer had to skip in its file (malformed DWARF, perf map lines).
	// Each once, in the order met.
	Notes []string `json:"notes,omitempty"`

	advice    string // what to do about it, "" when nothing (Report.Advice gathers them)
	index     int
	tableZero bool   // the header's table has the path with an all-zero build-id
	inodes    int    // how many dev/inode identities the recording mapped this path as
	relocSym  string // kernel: perf's reference symbol ("_text"), from "[kernel.kallsyms]_text"
	relocAddr uint64 // kernel: its address when recorded (the kernel map's pgoff)
	symDelta  uint64 // added to an offset before symbolizing (kernel relocation to the symbols' boot)
	needReloc bool   // symbols come from this boot's /proc/kallsyms: relocate first
	firstTime uint64
	pid       uint32
	symPath   string // file to symbolize with, "" = do not symbolize

	modNames  string        // how a module is named: "kallsyms", "ko" or "" (not)
	modLimit  uint64        // a module's recorded length
	modLookup *moduleLookup // the .ko's symbols, when judge read them
	// kernelNames is the kernel's lookup kept open after symbolizing
	// for KernelSymbol (Options.Replay), until Result.Close.
	kernelNames symbolLookup

	// Unwinding (--call-graph dwarf) happens while reading, before the
	// verdicts: what cfiFor found is kept here and reused by judge, and
	// its table on the DSO itself, which every unwound frame reaches.
	cfi         *unwind.Table        // CFI of the binary proven to be the one that ran, when cfiRead
	cfiRead     bool                 // cfiFor has decided cfi
	cfiQuery    buildid.ID           // the build-id cfiFor asked the locator for, nil if it did not
	cfiFound    *buildidcache.Result // its answer
	cfiErr      error                // or the error
	cfiWhy      string               // why unwinding cannot pass through this DSO, "" when it can
	unwindStops uint64               // samples whose unwinding stopped at this DSO for that reason
}

// Trusted reports whether the DSO's frames keep a sample trusted.
func (d *DSO) Trusted() bool { return d.Verdict.Trusted() }

// Options tune a check. The zero value does what `perfcheck check` does by
// default: binaries are looked up in perf's build-id cache
// ($PERF_BUILDID_DIR, else buildid.dir in ~/.perfconfig, else
// $HOME/.debug), then /usr/lib/debug, then the servers of
// $DEBUGINFOD_URLS (no network access when it is unset), then at the
// recorded path (docs/buildidcache.md).
type Options struct {
	// Lookup says where binaries are looked up by build-id when Resolver
	// is nil; its zero value is the default order above. Lookup.SymFS is
	// also where recorded paths are looked at on disk.
	Lookup buildidcache.Options
	// Resolver, when set, looks binaries up instead of one Analyze builds
	// from Lookup (and closes when it returns). The caller closes it; one
	// Resolver shared by several analyses downloads each file once.
	// Lookup is then not used: recorded paths are looked at under the
	// Resolver's SymFS.
	Resolver *buildidcache.Resolver
	// TrustPaths symbolizes replaced and mismatched DSOs through the file
	// at the path anyway. Their frames stay marked untrusted.
	TrustPaths bool
	// NoSymbols skips symbolization (the check alone needs none).
	NoSymbols bool
	// Replay keeps what Result.EachSample needs to read the recording
	// again (perfcheck script): the recording's file open, or a copy of a
	// stream in a temporary file; Result.Close releases it. Samples are
	// then counted by their DSOs, as with ReportOnly, so memory is bounded
	// by the distinct locations, not the stacks or the samples, and
	// Result.Stacks and Aggregates are empty.
	Replay bool
	// Branches, with Replay or OnSample, locates the addresses of each
	// sample's branch stack (perfdata.Sample.Branches) as it does those
	// of Sample.AddrLocation: Sample.Branches names where each branch
	// leads from and to under the verdict rules frames follow, and the
	// DSOs they lie in are judged (perfcheck script -F brstacksym).
	Branches bool
	// ReportOnly says the caller needs only Result.Report (perfcheck
	// check): samples are then counted by where their frames are (the
	// leaf's DSO and the set of all their DSOs), not by stack, which is
	// all the DSOs' hits and the trust figures need. Result.Stacks,
	// Locations and Aggregates are then empty. It implies NoSymbols.
	ReportOnly bool
	// OnSample, when set, is called for every sample as it is read (those
	// Filter keeps), in delivery order, on the goroutine that called
	// Analyze: for a stream that is printed while it is written
	// (perfcheck script - from a pipe). Its frames are named with the
	// verdicts known when it is read; Result.Changed lists any that the
	// end of the recording changed. The Sample is valid only until it
	// returns; an error from it stops the reading, and Analyze returns
	// it. It excludes Replay and ReportOnly; as with them, samples are
	// counted by their DSOs and Result.Stacks and Aggregates are empty.
	OnSample func(*Sample) error
	// Workers bounds parallel lookups and symbolization; 0 = GOMAXPROCS.
	Workers int
	// Progress, when set, is told how the check advances: now and then
	// during reading with the byte offset reached, then once when reading
	// is done (for a progress bar). It is called on the goroutine that
	// called Analyze, never concurrently with itself, and never after
	// Analyze returns.
	Progress func(Progress)
	// JITMapDir is where perf-PID.map files are looked for; "" = /tmp.
	JITMapDir string
	// Filter selects the samples looked at; the zero Filter keeps all.
	Filter Filter

	locator    locator      // tests: replaces the Resolver
	symbolizer symbolOpener // tests: replaces the symbolize package
	host       hostRoots    // tests: replaces /sys and /proc for kernel modules
	batchOps   int          // tests: the most records a feed batch holds; 0 = feedBatchOps
	rawProbe   uint64       // tests: the samples rawCacheOff judges over; 0 = rawProbe
	rawEntries int          // tests: the raw-stack cache's bound; 0 = rawCacheEntries

	// debugFiles, set by Analyze, is the lookup whose debug directories
	// defaultOpener looks for separate debug files in.
	debugFiles *buildidcache.Resolver
}

// Progress is what Options.Progress is told.
type Progress struct {
	Phase Phase
	// Offset is the byte offset reading has reached (PhaseRead).
	Offset int64
	// Locations is the number of distinct (DSO, offset) pairs the samples
	// touch, all of them symbolized unless Options.NoSymbols, and DSOs the
	// number of DSOs to locate (PhaseSymbolize).
	Locations, DSOs int
}

// A Phase is a stage of a check.
type Phase uint8

// Phases of a check.
const (
	// PhaseRead: the recording is being read.
	PhaseRead Phase = iota
	// PhaseSymbolize: reading is done; binaries are located by build-id
	// and the distinct locations symbolized, which on a large recording
	// takes a while after the last byte is read.
	PhaseSymbolize
)

// recInfo is what the check learns about the recording itself, beyond its
// records: what Analyze reads from the file's metadata and header.
type recInfo struct {
	// end is when the recording ended, in wall time: perf rewrites the
	// header last, so a perf.data file's mtime is it. Zero when unknown
	// (a pipe).
	end time.Time
	// clock converts perf time to wall time (CLOCK_DATA); nil when the
	// recording has none.
	clock *perfdata.ClockData
	// endSource says where end comes from: EndFromClock or
	// EndFromMTime; "" when end is unknown.
	endSource string
	// machine is the recording's kernel release, architecture and host
	// (the OSRELEASE, ARCH and HOSTNAME features); "" when unknown.
	machine machine
}

func (o *Options) jitMapPath(pid uint32) string {
	dir := o.JITMapDir
	if dir == "" {
		dir = "/tmp"
	}
	return filepath.Join(dir, "perf-"+strconv.Itoa(int(int32(pid)))+".map")
}

func (o *Options) jitMapExists(pid uint32) bool {
	st, err := os.Stat(o.jitMapPath(pid))
	return err == nil && st.Mode().IsRegular()
}

// diskPath is where a recorded path is looked at: under SymFS when set,
// cleaned as if rooted so that ".." in a recorded name cannot climb out.
func (o *Options) diskPath(p string) string {
	if o.Lookup.SymFS == "" {
		return p
	}
	return filepath.Join(o.Lookup.SymFS, filepath.Clean("/"+p))
}

// wallTime converts a perf timestamp to wall time through CLOCK_DATA.
func (r *recInfo) wallTime(t uint64) (time.Time, bool) {
	if r.clock == nil || r.clock.WallClockNS == 0 || t == 0 {
		return time.Time{}, false
	}
	ns := int64(r.clock.WallClockNS) + (int64(t) - int64(r.clock.ClockIDNS))
	return time.Unix(0, ns), true
}

// assignTableBuildIDs gives DSOs without an MMAP2 build-id the build-id the
// header's table holds for them. The table's pid is the machine (-1 for
// the host, HOST_KERNEL_ID), not a process, and its entries carry no time,
// so when one path has several build-ids the only link from a mapping to
// an entry is order: perf 6.1 writes the table in the order it created the
// DSOs, which is the order of their first MMAP. That pairing is used only
// when MMAP2's dev/inode split the path into exactly as many DSOs as there
// are build-ids; otherwise the DSO keeps all candidates and no identity.
func (s *session) assignTableBuildIDs() {
	t := newBuildIDTable(s.buildIDs)
	byPath := s.pathPeers()
	for _, d := range s.dsos {
		if d.BuildID != nil {
			continue
		}
		ids := t.lookup(d)
		d.tableZero = t.zero[tableKey{d.Path, d.Kind == dso.Kernel || d.Kind == dso.Module}] ||
			d.Kind == dso.Kernel && t.zero[tableKey{"[kernel.kallsyms]", true}]
		switch {
		case len(ids) == 0:
		case len(ids) == 1:
			d.BuildID = ids[0]
			d.BuildIDSource = "header"
		default:
			pairByOrder(d, byPath[d.Path], ids)
		}
	}
}

// tableKey is an entry's name in the header's build-id table, and whether
// it is the kernel's (the kernel and its modules) or user space's.
type tableKey struct {
	name   string
	kernel bool
}

// buildIDTable is the header's build-id table by name: the distinct
// build-ids of each, and which names perf wrote an all-zero build-id for.
type buildIDTable struct {
	ids  map[tableKey][]buildid.ID
	zero map[tableKey]bool
}

func newBuildIDTable(entries []perfdata.BuildIDEntry) *buildIDTable {
	t := &buildIDTable{ids: map[tableKey][]buildid.ID{}, zero: map[tableKey]bool{}}
	for _, e := range entries {
		var kernel bool
		switch e.CPUMode {
		case perfdata.CPUModeKernel:
			kernel = true
		case perfdata.CPUModeUser, perfdata.CPUModeUnknown, perfdata.CPUModeHypervisor:
		default:
			continue // a guest's DSO, not this machine's
		}
		k := tableKey{e.Filename, kernel}
		if e.BuildID.IsZero() {
			t.zero[k] = true
			continue
		}
		if !slices.ContainsFunc(t.ids[k], e.BuildID.Matches) {
			t.ids[k] = append(t.ids[k], e.BuildID)
		}
	}
	return t
}

// lookup returns the build-ids the table holds for d.
func (t *buildIDTable) lookup(d *DSO) []buildid.ID {
	switch d.Kind {
	case dso.Kernel:
		return t.ids[tableKey{"[kernel.kallsyms]", true}]
	case dso.Module:
		for _, n := range moduleTableNames(d.Path) {
			if ids := t.ids[tableKey{n, true}]; len(ids) > 0 {
				return ids
			}
		}
		return nil
	case dso.File, dso.VDSO:
		return t.ids[tableKey{d.Path, false}]
	}
	return nil
}

// pathPeers groups the DSOs without a recorded build-id by path, in order
// of creation, and sets each one's inodes: how many of its peers MMAP2's
// dev/inode set apart.
func (s *session) pathPeers() map[string][]*DSO {
	byPath := map[string][]*DSO{}
	for _, d := range s.dsos {
		if d.BuildID == nil {
			byPath[d.Path] = append(byPath[d.Path], d)
		}
	}
	for _, peers := range byPath {
		n := 0
		for _, p := range peers {
			if p.Dev != nil {
				n++
			}
		}
		for _, p := range peers {
			p.inodes = n
		}
	}
	return byPath
}

// pairByOrder gives d the build-id of ids at its place among peers, the
// DSOs of its path in order of creation, when dev/inode split the path
// into exactly as many DSOs as there are build-ids; otherwise d keeps them
// all as candidates.
func pairByOrder(d *DSO, peers []*DSO, ids []buildid.ID) {
	paired := len(peers) == len(ids)
	for _, p := range peers {
		if p.Dev == nil {
			paired = false
		}
	}
	if !paired {
		d.Candidates = ids
		return
	}
	for i, p := range peers {
		if p == d {
			d.BuildID = ids[i]
			d.BuildIDSource = "header"
		}
	}
}

// judge gives d its verdict. It reads files and asks the locator; it is
// safe to call for different DSOs concurrently.
func (s *session) judge(ctx context.Context, d *DSO, loc locator) {
	switch d.Kind {
	case dso.Anon, dso.Unknown, dso.Guest, dso.Vsyscall:
		d.Verdict = NoFile
		d.Reason = noFileReasons[d.Kind]
		return
	case dso.JIT:
		s.judgeJIT(d)
		return
	}
	if len(d.Candidates) > 0 {
		d.Verdict = Replaced
		d.Reason = manyBuildIDs(len(d.Candidates)) + "; record with --buildid-mmap"
		d.advice = "record with perf record --buildid-mmap so each mapping carries its own build-id"
		return
	}
	if d.BuildID != nil {
		s.judgeBuildID(ctx, d, loc)
		return
	}
	switch d.Kind {
	case dso.Kernel:
		s.judgeKernelWithoutBuildID(d)
	case dso.VDSO:
		s.judgeVDSOWithoutBuildID(d)
	default:
		s.judgePath(d)
	}
}

// manyBuildIDs says why a mapping of a path for which the header's table
// holds n build-ids, and its MMAP2 none, has no identity.
func manyBuildIDs(n int) string {
	return fmt.Sprintf("the file at this path changed during the recording (%d build-ids recorded for it) and nothing ties this mapping to one of them", n)
}

// noFileReasons say why a mapping without a file has no identity.
var noFileReasons = map[dso.Kind]string{
	dso.Anon:     "anonymous memory: no file, no identity; addresses shown raw",
	dso.Unknown:  "no mapping covered these addresses when they were sampled",
	dso.Guest:    "guest code: not this machine's to resolve",
	dso.Vsyscall: "the kernel's fixed vsyscall page: no file, no identity",
}

// judgeJIT judges JIT code by its perf map: it has no identity, but it is
// append-only, so its names are used unless the map predates the
// recording, or another user (not root) owns it.
func (s *session) judgeJIT(d *DSO) {
	o := &s.opts
	p := o.jitMapPath(d.pid)
	st := statFile(p)
	if !st.Exists {
		d.Verdict = Missing
		d.Reason = "JIT code; its perf map " + p + " is gone"
		return
	}
	if fi, err := os.Stat(p); err == nil {
		if uid, foreign := buildidcache.ForeignOwner(fi); foreign {
			d.Verdict = Missing
			d.Reason = fmt.Sprintf("JIT code; its perf map %s is owned by uid %d, not by the current user or root: ignored, as perf ignores it", p, uid)
			return
		}
	}
	d.Verdict = Unverified
	d.FoundPath = p
	d.Source = "perf-map"
	d.symPath = p
	d.Reason = "JIT code named by " + p + ": a perf map has no identity; it is append-only, so names are used"
	if !s.rec.end.IsZero() && st.MTime.Before(s.rec.end.Add(-24*time.Hour)) {
		d.Verdict = Replaced
		d.symPath = ""
		d.Reason = "JIT code; " + p + " is older than the recording by more than a day: another process with this pid wrote it"
	}
}

// judgeBuildID judges d, whose build-id was recorded: verified when the
// locator finds a binary with it (or, for a module, the module loaded now
// has it), else mismatch or missing by what is at the path.
func (s *session) judgeBuildID(ctx context.Context, d *DSO, loc locator) {
	found, err := s.lookup(ctx, d, loc)
	if err == nil {
		s.verified(d, found)
		return
	}
	if !errors.Is(err, buildidcache.ErrNotFound) {
		d.Reason = "lookup failed: " + err.Error() + "; "
	}
	if d.Kind == dso.Module && s.opts.Lookup.SymFS == "" && s.runningModuleMatches(d) {
		return
	}
	d.Err = err
	var nf *buildidcache.NotFoundError
	if errors.As(err, &nf) {
		d.Rejected = candidateReasons(nf.Rejected)
		d.Tried = nf.Tried
	}
	switch d.Kind {
	case dso.Kernel:
		d.Verdict = Mismatch
		d.Reason += "the recording's kernel (" + d.BuildID.String() + ") is not the running one and its kallsyms is not in the build-id cache"
		d.advice = "run `perfcheck cache fill` (or perf buildid-cache) on the recording machine, or point --buildid-dir at its cache"
		return
	case dso.VDSO:
		d.Verdict = Missing
		d.Reason += "this vdso (" + d.BuildID.String() + ") is not in the build-id cache and is not the running kernel's"
		d.advice = "perf caches the vdso at record time; use the recording machine's build-id cache (--buildid-dir)"
		return
	}
	s.judgeAtPath(d)
}

// lookup asks loc for d's binary by build-id, unless the unwinder asked
// already for the same identity (and was not cancelled).
func (s *session) lookup(ctx context.Context, d *DSO, loc locator) (*buildidcache.Result, error) {
	q := buildidcache.Query{Path: d.Path, Kind: d.Kind, BuildID: d.BuildID, PID: s.queryPID(d)}
	if d.cfiQuery != nil && d.cfiQuery.Matches(d.BuildID) && !isContextErr(d.cfiErr) {
		return d.cfiFound, d.cfiErr
	}
	return loc.Locate(ctx, q)
}

// verified gives d the verdict verified, with the binary found.
func (s *session) verified(d *DSO, found *buildidcache.Result) {
	d.Verdict = Verified
	d.Source = found.Identity.Locator
	d.FoundPath = found.Identity.Path
	d.FoundBuildID = found.BuildID
	d.Rejected = rejectedOf(found)
	d.symPath = symbolFile(found)
	d.Reason = "build-id " + d.BuildID.String() + " found (" + d.Source + ")"
	if d.Source == "running-kernel" {
		d.needReloc = true
	}
	if d.Kind == dso.Module {
		s.planModuleNames(d, found)
	}
	s.replacedDuringRecording(d)
}

// runningModuleMatches verifies module d against the module loaded now,
// whose build-id note is in /sys/module, when no .ko with its build-id was
// found anywhere; it reports whether it did.
func (s *session) runningModuleMatches(d *DSO) bool {
	name := moduleName(d.Path)
	id, err := s.opts.host.runningModuleBuildID(name)
	if err != nil || !id.Matches(d.BuildID) {
		return false
	}
	d.Verdict = Verified
	d.Source = "running-module"
	d.FoundPath = s.opts.host.moduleDir(name)
	d.FoundBuildID = id
	d.Reason = "build-id " + d.BuildID.String() + " is the one of module " + name + " loaded now"
	s.planModuleNames(d, nil)
	return true
}

// judgeAtPath judges a file whose recorded build-id was found nowhere by
// what is at its path now: missing, or a mismatch.
func (s *session) judgeAtPath(d *DSO) {
	o := &s.opts
	disk := o.diskPath(d.Path)
	st := s.states.get(disk)
	if st.Exists {
		d.FoundPath = disk
	}
	asked := o.debuginfodServers()
	switch {
	case !st.Exists:
		d.Verdict = Missing
		d.Reason += "no file at the path and no binary with build-id " + d.BuildID.String() + " found"
		d.advice = "keep binaries by build-id at record time (`perfcheck cache fill perf.data`), or set --debuginfod"
		if asked {
			d.advice = "keep binaries by build-id at record time (`perfcheck cache fill perf.data`); the debuginfod servers set did not provide them (each one's reason says what they answered)"
		}
	case st.Compression != "" && d.Kind != dso.Module:
		// A process maps an ELF file itself; only kernel modules are
		// loaded from compressed files.
		d.Verdict = Mismatch
		d.FoundBuildID = nil
		d.Reason += "the file at the path is " + st.Compression + "-compressed, not the ELF file a process maps; the recorded build-id is " + d.BuildID.String()
	case st.BuildID == nil:
		d.Verdict = Mismatch
		d.FoundBuildID = nil
		d.GoBuildID = st.GoBuildID
		d.Reason += "the file at the path has no build-id; the recorded one is " + d.BuildID.String()
		d.advice = "the binary was rebuilt; find the one that ran by build-id (--buildid-dir, --debuginfod)"
		if asked {
			d.advice = "the binary was rebuilt; find the one that ran by build-id (--buildid-dir; the debuginfod servers set did not provide it)"
		}
	default:
		d.Verdict = Mismatch
		d.FoundBuildID = st.BuildID
		d.GoBuildID = st.GoBuildID
		d.Reason += "the file at the path has build-id " + st.BuildID.String() + ", the recording " + d.BuildID.String()
		d.advice = "the binary was rebuilt; run `perfcheck cache fill` at record time, or set --debuginfod to a server that has " + d.BuildID.String()
		if asked {
			d.advice = "the binary was rebuilt; run `perfcheck cache fill` at record time (the debuginfod servers set did not provide the one that ran)"
		}
	}
	if said := debuginfodSaid(d.Err); said != "" && asked {
		d.Reason += "; debuginfod: " + said
	}
	if d.Verdict == Mismatch && o.TrustPaths && st.IsELF && (st.Compression == "" || d.Kind == dso.Module) {
		d.symPath = disk
	}
}

// judgePath judges a file recorded without a build-id by the file at its
// path: missing, replaced when something shows it changed (another inode,
// modified after it was mapped), else unverified.
func (s *session) judgePath(d *DSO) {
	o := &s.opts
	ev := s.pathEvidence(d)
	disk, st := ev.path, ev.st
	if !st.Exists {
		d.Verdict = Missing
		d.Reason = "no build-id recorded and no file at the path"
		d.advice = "keep binaries by build-id at record time (`perfcheck cache fill perf.data`)"
		return
	}
	d.FoundPath = disk
	d.FoundBuildID = st.BuildID
	d.GoBuildID = st.GoBuildID
	// A process maps an ELF file itself; only kernel modules are loaded
	// from compressed files.
	elfFile := st.IsELF && (st.Compression == "" || d.Kind == dso.Module)
	// A different device is another view of the filesystem (overlayfs,
	// a container, NFS): nothing shows a change.
	sameInode := ev.inode == inodeSame
	switch {
	case ev.inode == inodeOther:
		d.Verdict = Replaced
		d.Reason = fmt.Sprintf("no build-id recorded; the file at the path is another inode (%d recorded, %d now)", d.Dev.Ino, st.Ino)
	case ev.modified != "":
		d.Verdict = Replaced
		d.Reason = "no build-id recorded; " + ev.modified
	}
	if d.Verdict == 0 {
		d.Verdict = Unverified
		d.Source = "path"
		if elfFile {
			// Only a regular ELF file (statFile read its identity through
			// an open that cannot block): a FIFO or device named by a
			// hostile recording would hang the symbolizer's open.
			d.symPath = disk
		}
		switch {
		case sameInode:
			d.Reason = "no build-id recorded; same device and inode as recorded"
		case s.rec.end.IsZero() && s.rec.clock == nil:
			d.Reason = "no build-id recorded and no recording time known: nothing to compare"
		default:
			d.Reason = "no build-id recorded; the file is older than the recording"
		}
	}
	noBuildIDAdvice(d, st, len(s.buildIDs) > 0)
	if d.Verdict == Replaced && o.TrustPaths && elfFile {
		d.symPath = disk
	}
	if st.IsELF && !elfFile {
		d.Reason += "; not symbolized: the file at the path is " + st.Compression + "-compressed, not the ELF file a process maps"
	}
	if !st.IsELF {
		d.Reason += "; not symbolized: the file at the path is not a regular ELF file"
		if st.IdentErr != nil {
			d.Reason += " (" + st.IdentErr.Error() + ")"
		}
	}
	if d.Kind == dso.Module && d.symPath != "" {
		// A module without a build-id, trusted by its path: named from
		// the .ko there when its layout allows it.
		d.modNames = "ko"
		_, d.modLimit, _ = s.moduleRange(d)
	}
}

// pathEvidence is what the file at the path of a DSO recorded without a
// build-id shows about it. judge makes it the verdict (Replaced on any sign
// of change); unwinding asks more of it, proof that the file is the one
// that ran: the same device and inode, and no sign of change.
type pathEvidence struct {
	path string     // where the file is looked at (under --symfs)
	st   *fileState // the file there now
	// inode compares st with the recorded device and inode: inodeUnknown
	// when MMAP2 recorded none, or under --symfs, whose files are copies
	// from elsewhere, their devices and inodes unrelated to the recorded
	// ones.
	inode    inodeMatch
	modified string // modifiedAfterMapped's reason, "" when it has none
}

// pathEvidence reads the evidence of the file at d's path, through the
// session's one look at each file.
func (s *session) pathEvidence(d *DSO) pathEvidence {
	o := &s.opts
	ev := pathEvidence{path: o.diskPath(d.Path)}
	ev.st = s.states.get(ev.path)
	if o.Lookup.SymFS == "" {
		ev.inode = d.Dev.now(ev.st)
	}
	ev.modified = s.rec.modifiedAfterMapped(d, ev.st)
	return ev
}

// noBuildIDAdvice says why d, recorded without a build-id, could not be
// verified, and what would have made it verifiable; st is the file at its
// path, table whether the recording has a build-id table.
func noBuildIDAdvice(d *DSO, st *fileState, table bool) {
	switch {
	case st.BuildID == nil && st.GoBuildID != "":
		d.Reason += "; a Go binary without a GNU build-id"
		d.advice = "build with Go ≥ 1.24 (a GNU build-id by default) or -ldflags=-B=gobuildid; -B none removes it"
	case st.BuildID == nil && st.IsELF:
		d.Reason += "; the binary has no build-id"
		d.advice = "link with -Wl,--build-id so profiles can be verified"
	case st.BuildID != nil && !table:
		d.Reason += "; the recording has no build-id table (perf 6.1 writes none with -z or in pipe mode, and none with --no-buildid)"
		d.advice = "record with perf record --buildid-mmap, or run `perfcheck cache fill` at record time"
	case st.BuildID != nil && d.tableZero:
		d.Reason += "; perf wrote an empty build-id for it (perf 6.1 does so in pipe mode and with -z)"
		d.advice = "record with perf record --buildid-mmap, or run `perfcheck cache fill` at record time"
	case st.BuildID != nil:
		d.Reason += "; the recording has no build-id for it (older perf records build-ids only for DSOs hit by a sample's IP, not for those seen only in callchains)"
		d.advice = "record with perf record --buildid-mmap, or run `perfcheck cache fill` at record time"
	}
}

// modifiedAfterMapped says why the file at the path, whose state is st,
// may not hold the code d ran, as far as its modification time shows, or
// "" when it shows nothing: written after d was first mapped (when
// CLOCK_DATA gives that time in wall time), else after the recording
// ended. A file rewritten in place keeps its device and inode, so for a
// binary without a build-id this is the only sign. judge's verdict and
// cfiFiles' choice of unwind tables both ask it, so that unwinding never
// walks through the new build's tables beneath a frame the verdict calls
// replaced.
func (r *recInfo) modifiedAfterMapped(d *DSO, st *fileState) string {
	if t, ok := r.wallTime(d.firstTime); ok && st.MTime.After(t) {
		return "the file was modified at " + st.MTime.UTC().Format(time.RFC3339) + ", after it was mapped (" + t.UTC().Format(time.RFC3339) + ")"
	}
	if !r.end.IsZero() && st.MTime.After(r.end) {
		return "the file was modified at " + st.MTime.UTC().Format(time.RFC3339) + ", after the recording ended (" + r.end.UTC().Format(time.RFC3339) + ")"
	}
	return ""
}

// replacedAfterMapped reports whether st, the file at d's path now, is the
// replacement of the inode d mapped that the header's build-id id was
// read from: another inode of d's device, carrying id, written after d
// was mapped (CLOCK_DATA gives that time in wall time) and before the
// recording ended. judge (replacedDuringRecording) and unwinding
// (replacedSoFar) both ask it.
func (r *recInfo) replacedAfterMapped(d *DSO, id buildid.ID, st *fileState) bool {
	t, ok := r.wallTime(d.firstTime)
	return ok && d.Dev.now(st) == inodeOther && !r.end.IsZero() && st.BuildID.Matches(id) &&
		st.MTime.After(t) && !st.MTime.After(r.end)
}

// planModuleNames decides how a verified module's frames are named (see
// kernel.go): from this boot's /proc/kallsyms when the module loaded now
// has the recorded build-id and the recorded address, else from the .ko
// that proved the identity when its .text starts the module's text, else
// not at all, with the reason. found is nil when only the loaded module
// proved the identity. The symbols themselves are read when symbolizing.
func (s *session) planModuleNames(d *DSO, found *buildidcache.Result) {
	d.symPath = ""
	d.modNames = ""
	// The lookup's decompressed image of a compressed .ko, taken (and so
	// released from the lookup's memo) whichever way the module is named.
	var image []byte
	if found != nil {
		image = takeModule(&s.moduleMu, found)
	}
	name := moduleName(d.Path)
	var why []string
	start, limit, ok := s.moduleRange(d)
	if s.opts.Lookup.SymFS != "" {
		why = append(why, "under --symfs this machine's loaded modules are not the recording's")
	} else if !ok {
		why = append(why, "the recording maps it at more than one address")
	} else if id, err := s.opts.host.runningModuleBuildID(name); err != nil {
		why = append(why, "it is not loaded now ("+err.Error()+")")
	} else if !id.Matches(d.BuildID) {
		why = append(why, "the module loaded now has build-id "+id.String())
	} else if base, err := s.opts.host.runningModuleBase(name); err != nil {
		why = append(why, err.Error())
	} else if base != start {
		why = append(why, fmt.Sprintf("it is loaded now at %#x, not at %#x as recorded", base, start))
	} else {
		d.modNames = "kallsyms"
		d.symPath = s.opts.host.kallsyms()
		d.modLimit = limit
		d.Reason += "; named from /proc/kallsyms: the module is loaded now with this build-id at the recorded address"
		return
	}
	if found != nil {
		p := found.Identity.Path
		if m, err := symbolize.ReadModule(p, image, limit, d.BuildID); err != nil {
			why = append(why, changed(err).Error())
		} else {
			d.modNames = "ko"
			d.symPath = p
			d.modLimit = limit
			d.modLookup = &moduleLookup{mod: m, buildID: m.BuildID()} // read once: symbolize uses it
			d.Reason += "; named from the .text symbols of " + p
			return
		}
	}
	d.Reason += "; module frames are shown as offsets: " + strings.Join(why, "; ")
}

// moduleRange returns where the recording mapped module d: the start and
// length of its kernel map; ok is false when it was mapped at several
// addresses (reloaded during the recording).
func (s *session) moduleRange(d *DSO) (start, limit uint64, ok bool) {
	n := 0
	for _, m := range s.tracker.Maps(addrspace.KernelPID) {
		if m.Kind != dso.Module || s.dsoOf(m) != d {
			continue
		}
		if n > 0 && m.Start != start {
			return 0, 0, false
		}
		start, limit = m.Start, m.Limit-m.Start
		n++
	}
	return start, limit, n > 0
}

// replacedDuringRecording catches a trap of the header's table: perf reads
// the build-ids it writes there at the end of the recording, from the
// files then on disk (perf_session__write_header → build_id__read via
// dsos__read_build_ids). A file replaced while recording is thus described
// by its replacement's build-id, for the runs of the old file too.
//
// The recording proves it when it mapped one path as several inodes
// (several DSOs with different MMAP2 device/inode): the one build-id
// belongs to the file on disk at the end, so only the DSO whose inode is
// the file's now can be verified; the others are replaced. With a single
// inode the change can only be seen through time: when CLOCK_DATA gives the
// wall time of the mapping, a file now at the path that is another inode,
// carries the table's build-id and was written after the mapping and
// before the recording ended is the replacement. Without CLOCK_DATA
// nothing is concluded: a copy of the same file (git clone, cp, a package
// reinstalled) has another inode and a new mtime too, and its build-id is
// the proof that it is the same.
func (s *session) replacedDuringRecording(d *DSO) bool {
	o := &s.opts
	if d.BuildIDSource != "header" || d.Dev == nil || d.Kind != dso.File || o.Lookup.SymFS != "" {
		return false
	}
	st := s.states.get(o.diskPath(d.Path))
	if d.Dev.now(st) != inodeOther {
		return false
	}
	if d.inodes > 1 {
		d.Verdict = Replaced
		d.symPath = ""
		d.Reason = fmt.Sprintf("the file at this path changed during the recording (mapped as %d different inodes); the header's build-id, read when the recording ended, is the one of the file there now (inode %d), not of this one (inode %d)", d.inodes, st.Ino, d.Dev.Ino)
		d.advice = "record with perf record --buildid-mmap so each mapping carries its own build-id"
		return true
	}
	if !s.rec.replacedAfterMapped(d, d.BuildID, st) {
		return false
	}
	d.Verdict = Replaced
	d.symPath = ""
	d.Reason = fmt.Sprintf("the file was replaced during the recording (inode %d ran, %d is there now, written at %s, after it was mapped and before the recording ended): the header's build-id describes the replacement", d.Dev.Ino, st.Ino, st.MTime.UTC().Format(time.RFC3339))
	d.advice = "record with perf record --buildid-mmap so each mapping carries its own build-id"
	return true
}

// relocateKernel prepares symbolization of a recorded kernel through this
// boot's /proc/kallsyms: KASLR moves the kernel at every boot, so perf
// records the address of a reference symbol (the "_text" of
// "[kernel.kallsyms]_text", stored as the kernel map's pgoff by
// perf_event__synthesize_kernel_mmap) and relocates by the difference with
// the same symbol now (machine__create_kernel_maps, map__reloc_vmlinux).
func (s *session) relocateKernel(d *DSO) {
	if d.relocSym == "" {
		// No kernel map was recorded, so nothing says where this boot's
		// kernel was then: naming through this boot's kallsyms could be off
		// by the KASLR slide.
		d.symPath = ""
		d.Reason += "; no kernel map was recorded, so its addresses cannot be relocated to this boot: left unsymbolized"
		return
	}
	now, ok := symbolize.RunningKernelSymbol(d.relocSym)
	if !ok {
		d.symPath = ""
		d.Reason += "; /proc/kallsyms hides " + d.relocSym + "'s address (kptr_restrict), so the recorded addresses cannot be relocated: left unsymbolized"
		return
	}
	d.symDelta = now - d.relocAddr
}
