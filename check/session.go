package check

import (
	"context"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
	"github.com/perfcheck/perfcheck/unwind"
)

// Perf's callchain context markers (include/uapi/linux/perf_event.h,
// enum perf_callchain_context). Entries at or above contextMax are markers.
const (
	contextHV          = ^uint64(32) + 1   // -32
	contextKernel      = ^uint64(128) + 1  // -128
	contextUser        = ^uint64(512) + 1  // -512
	contextGuest       = ^uint64(2048) + 1 // -2048
	contextGuestKernel = ^uint64(2176) + 1 // -2176
	contextGuestUser   = ^uint64(2560) + 1 // -2560
	contextMax         = ^uint64(4095) + 1 // -4095
)

// sampleEvent is one PERF_RECORD_SAMPLE reduced to what the check needs.
type sampleEvent struct {
	Event     int // index of the event (attr) in the recording
	PID, TID  uint32
	CPU       uint32
	Time      uint64
	Period    uint64
	Mode      perfdata.CPUMode // header.misc & PERF_RECORD_MISC_CPUMODE_MASK
	IP        uint64
	Addr      uint64   // PERF_SAMPLE_ADDR, carried only for the events whose addresses script names (session.keepAddr)
	Callchain []uint64 // PERF_SAMPLE_CALLCHAIN as recorded, markers included; nil without
	// StackUser reports a copy of the user stack (PERF_SAMPLE_STACK_USER,
	// perf record --call-graph dwarf): the user callers are in it, not in
	// Callchain.
	StackUser bool
	// User, when set, holds that copy with the user registers; the user
	// frames are then recovered from it (unwind.Walk). It aliases the
	// reader's buffers: valid only during Sample.
	User *unwind.UserStack

	// chainHash, when chainHashed, is Callchain's digest under the
	// session's two raw-stack seeds, taken while the batch is read and
	// applied (feed.go), half on each goroutine.
	chainHash   [2]uint64
	chainHashed bool
	// key, when keyed, is the raw-stack key of this sample (without a
	// user stack) under the maps' generations keyPG and keyKG, computed
	// ahead by apply (feed.go) while it brought the key's cache slot in.
	key          rawKey
	keyPG, keyKG uint64
	keyed        bool
}

// chainFrames yields the frames of e's callchain with the CPU mode of
// each: the context markers (PERF_CONTEXT_*) set the mode of the entries
// after them and are no frames, and a first entry equal to the sample IP
// is dropped, as the stack already begins with the IP. stackOf resolves
// these and sampleIPs keeps their addresses, so both see one rule.
func (e *sampleEvent) chainFrames(yield func(perfdata.CPUMode, uint64) bool) {
	mode := e.Mode
	first := true
	for _, ip := range e.Callchain {
		if ip >= contextMax {
			switch ip {
			case contextKernel:
				mode = perfdata.CPUModeKernel
			case contextUser:
				mode = perfdata.CPUModeUser
			case contextHV:
				mode = perfdata.CPUModeHypervisor
			case contextGuestKernel:
				mode = perfdata.CPUModeGuestKernel
			case contextGuestUser, contextGuest:
				mode = perfdata.CPUModeGuestUser
			}
			continue
		}
		if first {
			first = false
			if ip == e.IP {
				continue
			}
		}
		if !yield(mode, ip) {
			return
		}
	}
}

// frameRef is one resolved address: a DSO and the offset in it.
type frameRef struct {
	dso int32
	off uint64
}

type dsoKey struct {
	kind    dso.Kind
	path    string
	buildID string // from MMAP2 (build-id form)
	devino  [4]uint64
	pid     uint32 // JIT maps are per process
}

// aggKey identifies one aggregate: a stack, an event, a thread.
type aggKey struct {
	stack int32
	event int32
	pid   uint32
	tid   uint32
	comm  int32
}

// session consumes a recording's events in perf's delivery order and
// collects, bounded by the number of distinct stacks, what the check needs.
// analyze feeds it (feed, addBuildIDs), then calls finish.
type session struct {
	opts    Options
	rec     recInfo
	tracker *addrspace.Tracker

	dsos   []*DSO
	filter *sampleFilter // nil keeps every sample
	dsoIdx map[dsoKey]int32
	// mapDSO gives the DSO index of each mapping record the tracker took,
	// by Mapping.ID: its pieces, and its copies in a forked process,
	// belong to the DSO it was given when it was made.
	mapDSO  []int32
	fm      firstMaps        // when not nil, each DSO's first executable mapping
	special map[string]int32 // "[unknown]" per mode and other pseudo DSOs
	// moduleMu guards the lookup answers takeModule takes module
	// images from.
	moduleMu sync.Mutex
	// states holds the files at the recorded paths, each read once, for
	// unwinding while reading and for the verdicts after it: both judge
	// a DSO by the same look at its file.
	states stateCache

	// Stacks are interned by a hash of their location ids, with the
	// content compared, so the stacks' own storage is the only copy of
	// them (intern.go).
	stackIdx stackTable
	// Distinct locations (dso, offset) get dense ids in order of first
	// use; a stack is a run of location ids, 4 bytes a frame, stored in
	// fixed-size chunks so that no stack is ever copied again.
	locs      []frameRef
	locIdx    locTable
	chunk     []int32
	stacks    [][]int32
	frames    int      // total frames of all stacks
	raws      rawTable // its aggs is &aggs
	userBuf   []uint64
	refBuf    []int32
	keyBuf    []aheadKey // apply's keys of a batch's samples
	addrNamed []bool
	addrRefs  []frameRef
	addrIdx   map[frameRef]int32
	locMemo   [16384]locMemo
	touched   uint64 // what apply's slot reads read (kept so they stay)
	aggs      aggTable
	sig       sigState // signature's, with Options.ReportOnly
	// stacker, while feed runs it, interns the stacks and counts the
	// aggregates on a goroutine of its own (stacker.go); stackerOps,
	// when not 0, says that feed pipelines and stackerDue may start it,
	// with batches of that many samples.
	stacker    *stacker
	stackerOps int
	comms      []string
	commIdx    map[string]int32
	// lastComm is commID's last answer (lastCommID -1: none).
	lastComm   string
	lastCommID int32
	buildIDs   []perfdata.BuildIDEntry
	samples    uint64
	// stackUserSamples counts samples whose user callers are only in a
	// stack copy (--call-graph dwarf) that cannot be unwound: it came
	// without the user registers (or not from x86-64), so no walk starts.
	stackUserSamples uint64
	// unprovenUnwinds counts samples whose unwinding stopped at a binary
	// not proven to be the one that ran.
	unprovenUnwinds uint64
	// replaying is set during EachSample's second reading, which
	// counts nothing again (replay.go).
	replaying bool
	// live, with Options.OnSample, is what hands each sample over as it
	// is read (live.go).
	live *live
	// user are the user frames userFrames gave for the last sample.
	user []uint64
	// sigSlot is the one slot samples feed with Options.ReportOnly
	// (signatureSlot) once rawOff is set (rawCacheOff): then the
	// raw-stack cache is no longer used. rawTries and rawHits count
	// lookups and hits until it is decided.
	sigSlot           rawSlot
	rawOff            bool
	rawTries, rawHits uint64

	// What the reading goroutine reads for every sample sits on cache
	// lines of its own: next to fields apply writes for every sample,
	// each read would wait for the line to come back from the other
	// core.
	_ linePad
	// keepAddr: the samples' PERF_SAMPLE_ADDR travel in the batches
	// (feedBatch.addrs), so that the first reading locates the
	// addresses of the events perf script names them for (addrNamed,
	// per event) and their DSOs are judged before the second. The
	// reader decides it at the first sample (decideAddr), when a
	// stream's events are known, before it hands that sample over. Each
	// distinct location is kept once in addrRefs.
	keepAddr    bool
	addrDecided bool
	// rawOffRead is rawOff for the reading goroutine (feed.go), which
	// then stops taking the callchains' digests.
	rawOffRead atomic.Bool
	// rawSeeds hash the raw stacks: the reader takes each callchain's
	// first digest under rawSeeds[0], apply the rest of the key (rawKey).
	rawSeeds [2]maphash.Seed
	_        linePad

	// unwindCtx is the context of the Analyze reading the
	// records, for the lookups unwinding makes meanwhile (cfiFor); nil
	// outside one. It is the session's, not an option: Options are
	// copied into the Result.
	unwindCtx context.Context
	// thisHost is this machine and its boot, read once (recordedThisBoot
	// asks for every DSO looked up, from the judging goroutines).
	thisHost  func() hostNow
	firstTime uint64
	lastTime  uint64
}

// linePad keeps the fields on either side of it off one cache line.
type linePad [64]byte

// newSession returns a session with opts.
func newSession(opts Options) *session {
	s := &session{
		opts:     opts,
		dsoIdx:   make(map[dsoKey]int32),
		special:  make(map[string]int32),
		stackIdx: newStackTable(),
		locIdx:   newLocTable(),
		aggs:     newAggTable(),
		commIdx:  make(map[string]int32),
	}
	s.tracker = s.newTracker()
	s.lastCommID = -1
	s.raws.aggs = &s.aggs
	s.rawSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	s.thisHost = sync.OnceValue(func() hostNow { return s.opts.host.now() })
	return s
}

// newTracker returns an empty address-space tracker for the session.
func (s *session) newTracker() *addrspace.Tracker {
	t := addrspace.New()
	// perf looks for /tmp/perf-PID.map when an anonymous executable map
	// appears (map__new in tools/perf/util/map.c).
	t.HasPerfMap = func(pid uint32) bool { return s.opts.jitMapExists(pid) }
	return t
}

// update feeds a record that changes the address spaces (MMAP, MMAP2,
// COMM, FORK); other records are ignored (addrspace.Tracker.Update). Like every record of a
// recording, it must come in perf's delivery order with the samples.
func (s *session) update(rec perfdata.Record) {
	if m := s.tracker.Update(rec); m != nil {
		s.onMap(m)
	}
}

// addBuildIDs adds entries of the header's build-id table (the BUILD_ID
// feature, or HEADER_BUILD_ID records in a pipe, which come at its end).
func (s *session) addBuildIDs(entries []perfdata.BuildIDEntry) {
	s.buildIDs = append(s.buildIDs, entries...)
}

// onMap gives each new mapping its DSO (m.ID is len(s.mapDSO): the
// tracker numbers the mappings in the order it makes them).
func (s *session) onMap(m *addrspace.Mapping) {
	k := dsoKey{kind: m.Kind, path: dsoPath(m)}
	switch m.Kind {
	case dso.Anon, dso.Unknown, dso.Guest, dso.Vsyscall:
		// No identity: one pseudo DSO per name.
	case dso.JIT:
		k.pid = m.PID
	default:
		if len(m.BuildID) > 0 {
			k.buildID = string(m.BuildID)
		} else if m.HasDevIno {
			k.devino = [4]uint64{uint64(m.Maj), uint64(m.Min), m.Ino, m.InoGeneration}
		}
	}
	i, ok := s.dsoIdx[k]
	if !ok {
		i = int32(len(s.dsos))
		d := &DSO{
			Path:      k.path,
			Kind:      m.Kind,
			index:     int(i),
			firstTime: m.Time,
			pid:       m.PID,
		}
		if len(m.BuildID) > 0 {
			d.BuildID = append(buildid.ID(nil), m.BuildID...)
			d.BuildIDSource = "mmap2"
		}
		if m.Kind == dso.Kernel {
			if i := strings.IndexByte(m.Path, ']'); i >= 0 && i+1 < len(m.Path) {
				d.relocSym = m.Path[i+1:]
				d.relocAddr = m.Pgoff
			}
		}
		if m.HasDevIno && k.devino != [4]uint64{} {
			d.Dev = &DevIno{Maj: m.Maj, Min: m.Min, Ino: m.Ino, Generation: m.InoGeneration}
		}
		s.dsos = append(s.dsos, d)
		s.dsoIdx[k] = i
	}
	s.mapDSO = append(s.mapDSO, i)
	if s.fm != nil {
		s.fm.add(m, s.dsos[i])
	}
}

// dsoOf returns the DSO of a mapping of the session's tracker.
func (s *session) dsoOf(m *addrspace.Mapping) *DSO { return s.dsos[s.mapDSO[m.ID]] }

// dsoPath is the DSO's name: the recorded path, with perf's kernel map name
// "[kernel.kallsyms]_text" shortened to the DSO name perf uses.
func dsoPath(m *addrspace.Mapping) string {
	p := m.Path
	switch m.Kind {
	case dso.Kernel:
		if i := strings.IndexByte(p, ']'); i >= 0 {
			return p[:i+1]
		}
	case dso.JIT:
		return "/tmp/perf-" + strconv.Itoa(int(int32(m.PID))) + ".map"
	case dso.Anon:
		switch {
		case p == "":
			return "[anon]"
		case strings.HasPrefix(p, "[stack"):
			return "[stack]"
		}
	}
	return p
}

func (s *session) specialDSO(name string, k dso.Kind) int32 {
	if i, ok := s.special[name]; ok {
		return i
	}
	i := int32(len(s.dsos))
	s.dsos = append(s.dsos, &DSO{Path: name, Kind: k, index: int(i)})
	s.special[name] = i
	return i
}

// resolve maps one address to a frameRef.
func (s *session) resolve(pid uint32, mode perfdata.CPUMode, ip uint64) frameRef {
	switch mode {
	case perfdata.CPUModeGuestKernel, perfdata.CPUModeGuestUser:
		return frameRef{dso: s.specialDSO("[guest]", dso.Guest), off: ip}
	}
	m := s.tracker.Lookup(pid, mode, ip)
	if m == nil {
		if mode == perfdata.CPUModeKernel || mode == perfdata.CPUModeHypervisor {
			// No kernel map was recorded (perf record without kernel
			// access, or -e ...:u with a stray kernel address): the
			// kernel is still the DSO, without a map to check it by.
			return frameRef{dso: s.specialDSO("[kernel.kallsyms]", dso.Kernel), off: ip}
		}
		return frameRef{dso: s.specialDSO("[unknown]", dso.Unknown), off: ip}
	}
	var off uint64
	switch m.Kind {
	case dso.File, dso.VDSO, dso.Module:
		off = m.Offset(ip)
	default:
		// Kernel text (perf sets pgoff = start, so offset = address),
		// JIT code named by absolute addresses in perf-PID.map, and
		// memory without a file: the address itself.
		off = ip
	}
	return frameRef{dso: s.mapDSO[m.ID], off: off}
}

// Sample feeds a SAMPLE record. The stack is the sample IP followed by the
// callchain, markers skipped; the callchain's first address normally
// repeats the sample IP (perf_callchain_kernel/user store regs->ip first),
// so it is dropped when equal, never counted twice.
func (s *session) sample(e *sampleEvent) {
	s.samples++
	if e.StackUser && e.User == nil {
		s.stackUserSamples++
	}
	if s.firstTime == 0 || e.Time < s.firstTime {
		s.firstTime = e.Time
	}
	if e.Time > s.lastTime {
		s.lastTime = e.Time
	}
	if s.stacker != nil || s.stackerOps > 0 && s.stackerDue() {
		s.stackedSample(e)
		return
	}
	raw := s.stackOf(e)
	id := raw.stack
	if s.opts.ReportOnly {
		// The report counts samples by signature alone (countHits):
		// one aggregate each, whatever the event, thread or comm.
		if raw.agg == 0 {
			raw.agg = s.aggs.find(aggKey{stack: id}) + 1
		}
		raw.samples++
		raw.period += e.Period
		return
	}
	comm := s.commID(s.tracker.ThreadComm(e.TID))
	if raw.agg == 0 || raw.event != int32(e.Event) || raw.tid != e.TID || raw.comm != comm {
		// Not the aggregate this raw stack fed last (its pid is part of
		// the raw stack's key).
		s.raws.flushCounts(raw)
		a := s.aggs.find(aggKey{stack: id, event: int32(e.Event), pid: e.PID, tid: e.TID, comm: comm})
		raw.agg, raw.event, raw.tid, raw.comm = a+1, int32(e.Event), e.TID, comm
	}
	raw.samples++
	raw.period += e.Period
}

func (s *session) commID(c string) int32 {
	// Samples come in runs of one process: the last answer is the
	// likely one (comparing a string with itself is one pointer test).
	if c == s.lastComm && s.lastCommID >= 0 {
		return s.lastCommID
	}
	if i, ok := s.commIdx[c]; ok {
		s.lastComm, s.lastCommID = c, i
		return i
	}
	i := int32(len(s.comms))
	s.comms = append(s.comms, c)
	s.commIdx[c] = i
	return i
}

// rawCacheEntries bounds the raw-stack cache (a 64-byte slot an entry, at
// most three quarters of the slots in use: under 32 MiB); past it the
// cache starts over (it is only a shortcut).
const rawCacheEntries = 1 << 18

// rawEntries is rawCacheEntries, or what a test sets (Options.rawEntries).
func (s *session) rawEntries() int {
	if s.opts.rawEntries > 0 {
		return s.opts.rawEntries
	}
	return rawCacheEntries
}

// rawKey identifies a raw stack by a 128-bit digest of what makes it
// resolve as it does: the process, its maps' generations, the mode and
// IP, the callchain (and unwound user frames) with their lengths. Each
// half hashes the callchain under one of two seeds chosen at random per
// session, then that hash with the other fields (rawFields). Keeping the
// digest instead of the addresses (hundreds of bytes per deep stack) makes
// the cache a fraction of the size and a hit one pass over them instead
// of a copy and a comparison; folding the other fields in keeps an entry
// at 16 bytes of key. Two different raw stacks share a digest with
// probability about n²/2¹²⁹ for n distinct ones (below 10⁻²⁶ for a
// million), and input cannot aim at it without the seeds.
type rawKey [2]uint64

// rawFields is what is hashed into each half of a rawKey. Fields are
// ordered so the struct has no padding and hashes as one block of memory.
type rawFields struct {
	h, pg, kg, ip uint64
	pid, mode     uint32
	nchain, nuser uint32
}

// rawKeyOf returns the raw-stack key of e under the maps' generations pg
// and kg, with user the frames unwound from its user stack copy.
func (s *session) rawKeyOf(e *sampleEvent, pg, kg uint64, user []uint64) rawKey {
	f := rawFields{pid: e.PID, mode: uint32(e.Mode), pg: pg, kg: kg, ip: e.IP,
		nchain: uint32(len(e.Callchain)), nuser: uint32(len(user))}
	var key rawKey
	for i := range key {
		if e.chainHashed {
			f.h = e.chainHash[i]
		} else {
			f.h = maphash.Bytes(s.rawSeeds[i], u64Bytes(e.Callchain))
		}
		if len(user) > 0 {
			// Rare (--call-graph dwarf): fold the unwound frames in.
			f.h = maphash.Comparable(s.rawSeeds[i], [2]uint64{f.h, maphash.Bytes(s.rawSeeds[i], u64Bytes(user))})
		}
		key[i] = maphash.Comparable(s.rawSeeds[i], f)
	}
	return key
}

// stackOf returns the raw-stack cache's entry for e, which holds the id of
// e's resolved stack. Raw stacks repeat: the same addresses in the same
// process, with its maps unchanged, resolve the same way, so they are
// looked up by their raw addresses and the maps' generations first, and
// resolved only when new. The entry is valid until the next call.
func (s *session) stackOf(e *sampleEvent) *rawSlot {
	pg, kg := s.tracker.Generation(e.PID)
	user := s.userFrames(e)
	if s.opts.ReportOnly && s.rawCacheOff() {
		return s.signatureSlot(e, user)
	}
	var key rawKey
	if e.keyed && e.User == nil && e.keyPG == pg && e.keyKG == kg {
		key = e.key
	} else {
		key = s.rawKeyOf(e, pg, kg, user)
	}
	if sl := s.raws.find(key); sl != nil {
		s.rawHits++
		return sl
	}

	var refs []int32
	switch {
	case s.opts.ReportOnly:
		refs = s.signature(e, user, s.refBuf[:0])
	case s.bySignature():
		refs = s.dsoSignature(s.locsOf(e, user, pg, kg, s.refBuf[:0]))
	default:
		refs = s.locsOf(e, user, pg, kg, s.refBuf[:0])
	}
	s.refBuf = refs
	return s.raws.insert(key, s.internStack(refs), s.rawEntries())
}

// internStack returns the id of the stack refs, adding it when new: stacks
// are deduplicated by their resolved content.
func (s *session) internStack(refs []int32) int32 {
	return s.internHashed(refs, s.stackIdx.hash(refs))
}

// internHashed is internStack of refs, whose hash (stackTable.hash) is h.
func (s *session) internHashed(refs []int32, h uint64) int32 {
	id, slot := s.stackIdx.find(h, refs, s.stacks)
	if id < 0 {
		id = int32(len(s.stacks))
		s.addStack(refs)
		s.stackIdx.insert(slot, h, id)
	}
	return id
}

// rawCacheOff reports whether Options.ReportOnly's reading has stopped
// using the raw-stack cache. A raw stack's signature is cheap to take
// again (a lookup per frame in the location memo; the signatures' table
// fits in the CPU's caches), so where raw stacks rarely repeat (a build's
// many short processes) the cache costs more than it saves: a hash of
// every callchain and a miss per new stack. Where they repeat (deep stacks
// of a few threads) a hit saves the lookup of every frame. So the cache
// is used until, over rawProbe samples, under a quarter of them hit it;
// the counts it holds then go to their aggregates (signatureSlot feeds
// them from then on).
func (s *session) rawCacheOff() bool {
	if s.rawOff {
		return true
	}
	probe := uint64(rawProbe)
	if s.opts.rawProbe > 0 {
		probe = s.opts.rawProbe
	}
	if s.rawTries++; s.rawTries < probe {
		return false
	}
	if s.rawHits*4 < s.rawTries {
		s.raws.flush()
		s.rawOff = true
		s.rawOffRead.Store(true)
		return true
	}
	s.rawTries, s.rawHits = 0, 0
	return false
}

// rawProbe is how many samples rawCacheOff judges the cache's hits over.
const rawProbe = 1 << 16

// signatureSlot is stackOf for Options.ReportOnly once the raw-stack cache
// is off (rawCacheOff): samples feed one slot, flushed into its aggregate
// when the signature changes.
func (s *session) signatureSlot(e *sampleEvent, user []uint64) *rawSlot {
	refs := s.signature(e, user, s.refBuf[:0])
	s.refBuf = refs
	id := s.internSignature(refs)
	sl := &s.sigSlot
	if sl.stack != id || sl.agg == 0 {
		s.raws.flushCounts(sl)
		*sl = rawSlot{stack: id}
	}
	return sl
}

// userFrames returns the user frames unwound from e's user stack copy
// (--call-graph dwarf), without the leaf when it is the sample IP; nil
// without a copy. They are in the session's buffer, valid until the next
// call.
func (s *session) userFrames(e *sampleEvent) []uint64 {
	s.user = nil
	if e.User == nil {
		return nil
	}
	user, unproven := s.unwindUser(e.PID, e.User, s.userBuf[:0])
	s.userBuf = user
	if len(user) > 0 && e.Mode == perfdata.CPUModeUser && user[0] == e.IP {
		user = user[1:] // the leaf is the sample IP
	}
	if unproven && !s.replaying {
		s.unprovenUnwinds++
	}
	s.user = user
	return user
}

// locsOf appends to refs the location id of each frame of e, leaf first:
// the sample IP, the callchain, then user, the frames unwound from its
// user stack copy; pg and kg are its process's maps' generations.
func (s *session) locsOf(e *sampleEvent, user []uint64, pg, kg uint64, refs []int32) []int32 {
	refs = append(refs, s.locOf(e.PID, e.Mode, e.IP, pg, kg))
	for mode, ip := range e.chainFrames {
		refs = append(refs, s.locOf(e.PID, mode, ip, pg, kg))
	}
	for _, ip := range user {
		refs = append(refs, s.locOf(e.PID, perfdata.CPUModeUser, ip, pg, kg))
	}
	return refs
}

// bySignature reports whether samples are counted by their DSO signature
// instead of their stack (dsoSignature): with Options.ReportOnly, which
// needs no stacks, and with Options.Replay and OnSample, which resolve
// each sample's locations as they hand it over.
func (s *session) bySignature() bool {
	return s.opts.ReportOnly || s.opts.Replay || s.opts.OnSample != nil
}

// locOf returns the location id of ip in pid's address space for mode,
// with pg and kg the maps' generations now (Tracker.Generation). A new raw
// stack is mostly addresses seen in other stacks of the process (the same
// call sites), so the answers are kept in a direct-mapped memo keyed by
// everything that decides them: generations are never reused, even across
// pid reuse, so an entry of maps since changed can no longer match. It
// saves resolving and interning each frame again (a miss in a table far
// larger than the caches, where stacks rarely repeat); it is sized to sit
// in a core's second-level cache, not its first, for the many distinct
// addresses of a large process.
func (s *session) locOf(pid uint32, mode perfdata.CPUMode, ip, pg, kg uint64) int32 {
	m := &s.locMemo[(ip^ip>>16^uint64(pid)*0x9e3779b97f4a7c15)%uint64(len(s.locMemo))]
	if m.ok && m.ip == ip && m.pid == pid && m.mode == mode && m.pg == pg && m.kg == kg {
		return m.id
	}
	r := s.resolve(pid, mode, ip)
	if s.opts.ReportOnly {
		r.off = 0 // one location per DSO (dsoSignature)
	}
	id := s.loc(r)
	*m = locMemo{ip: ip, pg: pg, kg: kg, pid: pid, mode: mode, id: id, ok: true}
	return id
}

// dsoSignature turns the location ids of a sample's frames into what the
// DSOs' hits and the trust figures count (session.bySignature): the
// leaf's DSO, then each of its DSOs once, in order of DSO index. Stacks
// with the same signature have the same hits and the same trust, and
// there are far fewer signatures than stacks.
func (s *session) dsoSignature(refs []int32) []int32 {
	for i, r := range refs {
		refs[i] = s.locs[r].dso
	}
	if len(refs) < 2 {
		return refs
	}
	rest := refs[1:]
	slices.Sort(rest)
	return append(refs[:1], slices.Compact(rest)...)
}

// locMemo is one entry of session.locMemo.
type locMemo struct {
	ip, pg, kg uint64
	pid        uint32
	id         int32
	mode       perfdata.CPUMode
	ok         bool
}

// loc interns a resolved address.
func (s *session) loc(r frameRef) int32 {
	i, isNew := s.locIdx.find(r, int32(len(s.locs)))
	if isNew {
		s.locs = append(s.locs, r)
	}
	return i
}

// stack returns stack id's location ids, leaf first.
func (s *session) stack(id int) []int32 { return s.stacks[id] }

// Stacks are stored in chunks that grow from stackChunkMin location ids
// (256 KB) to stackChunkMax (8 MB), four times larger each time: a small
// recording allocates little, a large one few chunks, and chunks from
// hugeChunk up are laid on huge pages where the kernel allows (hugeInt32s):
// on a large recording that is most of them, and first touching 4 KB
// pages costs more than the stores.
const (
	stackChunkMin = 1 << 16
	stackChunkMax = 1 << 21
	hugeChunk     = 1 << 20
)

// addStack stores a new stack's location ids.
func (s *session) addStack(refs []int32) {
	if cap(s.chunk)-len(s.chunk) < len(refs) {
		n := stackChunkMin
		if c := cap(s.chunk); c > 0 {
			n = min(4*c, stackChunkMax)
		}
		n = max(n, len(refs))
		if n >= hugeChunk {
			s.chunk = hugeInt32s(n)
		} else {
			s.chunk = make([]int32, 0, n)
		}
	}
	start := len(s.chunk)
	s.chunk = append(s.chunk, refs...)
	s.stacks = append(s.stacks, s.chunk[start:len(s.chunk):len(s.chunk)])
	s.frames += len(refs)
}

// locationPtrs returns the array Stack.Locations fills with every distinct
// stack's location pointers, one per frame (session.frames): at 8 bytes a
// frame, the largest block a Result allocates, so its whole 2 MB pages are
// advised as huge pages before it is first written (hugepage_linux.go).
func locationPtrs(frames int) []*Location {
	ptrs := make([]*Location, frames)
	if len(ptrs) > 0 {
		adviseHuge(unsafe.Pointer(unsafe.SliceData(ptrs)), uintptr(len(ptrs))*unsafe.Sizeof(ptrs[0]))
	}
	return ptrs
}

// numStacks is the number of distinct stacks.
func (s *session) numStacks() int { return len(s.stacks) }

// u64Bytes views addresses as their bytes in memory, without copying
// them, for hashing only (the byte order is the machine's; the digest
// never leaves the process).
func u64Bytes(v []uint64) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v))
}

// i32Bytes views location ids as their bytes in memory, for hashing only.
func i32Bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// moduleTableNames lists the names perf may have written a module's
// build-id under: its path, or its short name (dso.ModuleName).
func moduleTableNames(p string) []string {
	short, _ := dso.ModuleName(p)
	return []string{p, short}
}
