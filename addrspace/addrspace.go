package addrspace

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
)

// KernelPID is the pid perf gives the host kernel's maps: the synthesized
// "[kernel.kallsyms]_text" and module MMAP records carry pid -1
// (HOST_KERNEL_ID in tools/perf/util/machine.h), 0xffffffff as perfdata
// reads it.
const KernelPID = ^uint32(0)

// Mapping is one range of a process's (or the kernel's) address space, as
// an MMAP or MMAP2 record made it. Mappings are immutable once created: a
// later mapping that overlaps one leaves new Mappings for the pieces, with
// the same record fields and ID, so a Mapping pointer may be held across
// later records.
type Mapping struct {
	Start, Limit uint64 // [Start, Limit)
	// Pgoff is the file offset of Start; for the kernel map, the address
	// of the symbol its name follows ("[kernel.kallsyms]_text": _text).
	Pgoff uint64
	Kind  dso.Kind
	PID   uint32 // the owning process, KernelPID for the kernel's maps
	// ID numbers the MMAP and MMAP2 records a Tracker took, from 0: the
	// pieces a later mapping cuts out of this one share it, so that a
	// caller can keep what it learns about a mapped file in a slice.
	ID int

	// The record's fields.
	Path string // the recorded file name
	Time uint64 // the record's sample_id time (perf clock); 0 without sample_id_all
	Exec bool   // executable: the record has no PERF_RECORD_MISC_MMAP_DATA

	// MMAP2 only: the build-id form (perf record --buildid-mmap) sets
	// BuildID, the device and inode form sets HasDevIno and Maj, Min, Ino
	// and InoGeneration.
	BuildID            buildid.ID
	HasDevIno          bool
	Maj, Min           uint32
	Ino, InoGeneration uint64
	Prot, Flags        uint32
}

// Offset returns the file offset of ip, as perf's map__map_ip
// (tools/perf/util/map.h: ip - start + pgoff). For the kernel map perf sets
// pgoff to the start, so the offset of a kernel address is the address.
func (m *Mapping) Offset(ip uint64) uint64 { return ip - m.Start + m.Pgoff }

// space is a sorted, non-overlapping set of mappings.
type space struct {
	maps []*Mapping // sorted by Start, no overlaps
	// hit is the mapping the last lookup found: a callchain's addresses
	// are mostly in one or two mappings (the binary, libc), so most
	// lookups end here without a search. Every change of maps clears it.
	hit *Mapping
}

func (s *space) lookup(ip uint64) *Mapping {
	m, _, _ := s.lookupSpan(ip)
	return m
}

// lookupSpan is lookup that also returns the range [lo, hi) around ip over
// which lookup gives the same answer: the mapping's own range, or the hole
// between two mappings (hi 0: to the end of the address space).
func (s *space) lookupSpan(ip uint64) (m *Mapping, lo, hi uint64) {
	if m := s.hit; m != nil && m.Start <= ip && ip < m.Limit {
		return m, m.Start, m.Limit
	}
	// The first mapping that ends past ip (sort.Search, without its
	// function call per step).
	i, j := 0, len(s.maps)
	for i < j {
		h := int(uint(i+j) >> 1)
		if s.maps[h].Limit > ip {
			j = h
		} else {
			i = h + 1
		}
	}
	if i < len(s.maps) && s.maps[i].Start <= ip {
		s.hit = s.maps[i]
		return s.hit, s.hit.Start, s.hit.Limit
	}
	if i > 0 {
		lo = s.maps[i-1].Limit
	}
	if i < len(s.maps) {
		hi = s.maps[i].Start
	}
	return nil, lo, hi
}

// insert adds m, trimming or splitting the mappings it overlaps, as the
// kernel does on mmap over existing ranges and as perf's
// maps__fixup_overlappings (tools/perf/util/maps.c) mirrors.
func (s *space) insert(m *Mapping) {
	// First mapping whose end is past m.Start.
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].Limit > m.Start })
	j := i
	var keep []*Mapping
	for j < len(s.maps) && s.maps[j].Start < m.Limit {
		old := s.maps[j]
		if old.Start < m.Start {
			left := *old
			left.Limit = m.Start
			keep = append(keep, &left)
		}
		if old.Limit > m.Limit {
			right := *old
			right.Pgoff = old.Pgoff + (m.Limit - old.Start)
			right.Start = m.Limit
			keep = append(keep, &right)
		}
		j++
	}
	// Replace s.maps[i:j] with keep's left pieces, m, keep's right pieces.
	repl := make([]*Mapping, 0, 3) // at most a left piece, m, a right piece
	for _, k := range keep {
		if k.Limit <= m.Start {
			repl = append(repl, k)
		}
	}
	repl = append(repl, m)
	for _, k := range keep {
		if k.Start >= m.Limit {
			repl = append(repl, k)
		}
	}
	// In place: each process owns its slice (clone copies it), and the
	// Mappings themselves are never modified.
	s.maps = slices.Replace(s.maps, i, j, repl...)
	s.hit = nil
}

func (s *space) clone() *space {
	// Mappings are immutable, so a shallow copy is a full copy.
	return &space{maps: append([]*Mapping(nil), s.maps...)}
}

// process is the state kept per pid.
type process struct {
	gen   uint64 // changes whenever its maps do (Tracker.nextGen)
	pid   uint32
	space *space
	comm  string
	// askedPerfMap records that HasPerfMap was asked about this process;
	// jitMap that it answered yes.
	askedPerfMap bool
	jitMap       bool
}

// Tracker rebuilds the address spaces of a recording's processes and of the
// kernel from MMAP, MMAP2, FORK and COMM records fed in the order
// perf delivers them (time order; see perfdata's ordered delivery). Lookup
// then answers, for a sample at that moment, which mapping covered an
// address.
//
// Semantics follow tools/perf/util/machine.c:
//   - maps belong to a process (pid); threads share them;
//   - FORK with pid != ppid creates a process whose maps are a copy of the
//     parent's (thread__fork → maps__clone); FORK with pid == ppid is a new
//     thread sharing its process's maps. A FORK for a pid that is already
//     known means the pid was reused: the old process is forgotten, as
//     machine__process_fork_event removes a stale thread.
//   - COMM with PERF_RECORD_MISC_COMM_EXEC drops the process's maps: exec
//     replaces the whole address space, and the kernel emits the new image's
//     MMAPs (binary, loader, [vdso]) after the COMM. perf itself keeps the
//     old maps and lets new ones overwrite them; dropping them is what the
//     kernel did, and keeps a stale library from answering for an address.
//   - EXIT changes nothing: perf resolves samples through a dead thread's
//     maps until its pid is reused (unless ForgetExited is set).
//   - kernel maps (pid -1, or cpumode kernel) live in one kernel space;
//     kernel addresses are looked up there whatever the sample's pid.
//
// A Tracker is not safe for concurrent use.
type Tracker struct {
	// HasPerfMap, when set, reports whether a perf map (/tmp/perf-PID.map,
	// written by a JIT) describes the code of process pid: its anonymous
	// executable mappings are then dso.JIT. It is asked once per process,
	// when its first anonymous executable mapping appears, as perf's
	// map__new (tools/perf/util/map.c) looks for the file; a process made
	// by a later FORK of the same pid is asked again. When nil, the
	// Tracker reads nothing and makes no dso.JIT mapping.
	HasPerfMap func(pid uint32) bool

	// ForgetExited, when set, makes the EXIT of a process's main thread
	// (pid == tid) forget the process, its maps and comm, as the tools
	// of perf that delete exited threads do (perf_event__exit_del_thread
	// in tools/perf/util/event.c, used by perf buildid-list): a sample
	// the process takes after its exit then has no mapping, and a later
	// MMAP of the pid starts an empty address space. Other threads'
	// EXITs change nothing, their process's maps being shared.
	ForgetExited bool

	procs  map[uint32]*process
	kernel space    // modules and anything else perf puts in the kernel machine
	ktext  *Mapping // [kernel.kallsyms]_text: covers what modules do not
	nmaps  int      // the MMAP and MMAP2 records taken (the next Mapping.ID)
	// Generations let callers cache lookups: a process's gen and kgen
	// change whenever its maps or the kernel's do, and values are never
	// reused (nextGen only grows), even across pid reuse.
	nextGen uint64
	kgen    uint64
	// last caches the last process found by pid: samples come in runs of
	// one process, and each asks for its maps and its comm. Only a FORK
	// replaces the process of a pid (the others change it in place), so
	// it is the only record that drops the cache.
	last *process
	// threads holds each thread's command name, by tid (ThreadComm).
	threads map[uint32]string
}

// New returns an empty tracker.
func New() *Tracker {
	// perf registers the idle thread, pid and tid 0, as "swapper"
	// (perf_session__register_idle_thread in tools/perf/util/session.c).
	return &Tracker{procs: make(map[uint32]*process), threads: map[uint32]string{0: "swapper"}}
}

func (t *Tracker) bump() uint64 {
	t.nextGen++
	return t.nextGen
}

func (t *Tracker) proc(pid uint32) *process {
	p := t.find(pid)
	if p == nil {
		p = &process{pid: pid, space: &space{}, gen: t.bump()}
		t.procs[pid] = p
	}
	return p
}

// Update takes one record: MMAP, MMAP2, COMM and FORK change the address
// spaces, EXIT only with ForgetExited (see Tracker); other records are
// ignored. For an MMAP or MMAP2 record it returns the new mapping;
// otherwise nil. Nothing of rec is kept: perfdata
// reuses a record's storage for the next one.
func (t *Tracker) Update(rec perfdata.Record) *Mapping {
	switch r := rec.(type) {
	case *perfdata.Mmap:
		return t.mmap(&Mapping{
			Start: r.Addr, Limit: r.Addr + r.Len, Pgoff: r.PgOff, PID: r.PID,
			Path: r.Filename, Time: r.SampleID.Time, Exec: !r.IsData(),
		}, r.CPUMode())
	case *perfdata.Mmap2:
		m := &Mapping{
			Start: r.Addr, Limit: r.Addr + r.Len, Pgoff: r.PgOff, PID: r.PID,
			Path: r.Filename, Time: r.SampleID.Time, Exec: !r.IsData(),
			Prot: r.Prot, Flags: r.Flags,
		}
		if r.HasBuildID() {
			m.BuildID = append(buildid.ID(nil), r.BuildID...)
		} else {
			m.HasDevIno = true
			m.Maj, m.Min, m.Ino, m.InoGeneration = r.Maj, r.Min, r.Ino, r.InoGeneration
		}
		return t.mmap(m, r.CPUMode())
	case *perfdata.Comm:
		t.comm(r.PID, r.TID, r.Comm, r.Exec())
	case *perfdata.Fork:
		t.fork(r.PID, r.PPID)
		// A new thread takes its parent thread's name, if it had one
		// (thread__fork in tools/perf/util/thread.c); a reused tid
		// loses the old thread's.
		if c, ok := t.threads[r.PTID]; ok {
			t.threads[r.TID] = c
		} else {
			delete(t.threads, r.TID)
		}
	case *perfdata.Exit:
		if t.ForgetExited && r.PID == r.TID {
			delete(t.procs, r.PID)
			t.last = nil
		}
	}
	return nil
}

// isKernelMap reports whether an MMAP record belongs to the kernel machine:
// perf synthesizes the kernel and module maps with pid -1 and a kernel
// cpumode (perf_event__synthesize_kernel_mmap, perf_event__synthesize_modules).
func isKernelMap(pid uint32, mode perfdata.CPUMode) bool {
	return pid == KernelPID || mode == perfdata.CPUModeKernel
}

// mapHugeTLB is MAP_HUGETLB, an MMAP2 record's flag for memory backed by
// huge pages (include/uapi/asm-generic/mman-common.h on x86).
const mapHugeTLB = 0x40000

// classify gives the Kind of a recorded file name and MMAP2 flags, using
// perf's rules (tools/perf/util/map.c: is_anon_memory, is_no_dso_memory,
// is_vdso_map, and map__new, for which any MAP_HUGETLB mapping is
// anonymous: its file is on hugetlbfs, a copy at best, not a binary to
// look up).
func classify(p string, flags uint32, kernel bool) dso.Kind {
	if kernel {
		if strings.HasPrefix(p, "[kernel.kallsyms]") || strings.HasPrefix(p, "[guest.kernel.kallsyms") {
			return dso.Kernel
		}
		return dso.Module
	}
	switch {
	case p == "[vdso]" || p == "[vdso32]" || p == "[vdsox32]":
		return dso.VDSO
	case p == "[vsyscall]":
		return dso.Vsyscall
	case flags&mapHugeTLB != 0,
		p == "" || p == "//anon" || p == "/dev/zero" || strings.HasPrefix(p, "/anon_hugepage") ||
			strings.HasPrefix(p, "[anon") || strings.HasPrefix(p, "/SYSV") ||
			p == "[heap]" || strings.HasPrefix(p, "[stack") || p == "[vvar]" ||
			strings.HasPrefix(p, "/memfd:"):
		return dso.Anon
	}
	return dso.File
}

// mmap adds the mapping m of an MMAP or MMAP2 record of cpumode mode, its
// record fields set. Non-executable (data) maps are kept too: a sample can
// only hit executable ones, but they still cut existing ranges as the
// kernel's mmap did.
func (t *Tracker) mmap(m *Mapping, mode perfdata.CPUMode) *Mapping {
	kernel := isKernelMap(m.PID, mode)
	m.Kind = classify(m.Path, m.Flags, kernel)
	m.ID = t.nmaps
	t.nmaps++
	if m.Limit < m.Start { // wraps: perf's kernel map may run to ~0
		m.Limit = ^uint64(0)
	}
	if kernel {
		t.kgen = t.bump()
		m.PID = KernelPID
		if m.Kind == dso.Kernel {
			t.ktext = m
		} else {
			t.kernel.insert(m)
		}
		return m
	}
	if m.Kind == dso.Anon && m.Exec && t.HasPerfMap != nil {
		if p := t.proc(m.PID); !p.askedPerfMap {
			p.askedPerfMap = true
			if t.HasPerfMap(m.PID) {
				t.setJITMap(p)
			}
		}
	}
	p := t.proc(m.PID)
	p.gen = t.bump()
	if m.Kind == dso.Anon && m.Exec && p.jitMap {
		m.Kind = dso.JIT
	}
	p.space.insert(m)
	return m
}

// setJITMap says that p's anonymous executable maps are described by a
// perf map file, as perf's thread__find_map decides for anonymous memory.
// The maps it has already are JIT code too (of the same mapped memory, so
// they keep their ID).
func (t *Tracker) setJITMap(p *process) {
	p.jitMap = true
	p.gen = t.bump()
	p.space.hit = nil
	for i, m := range p.space.maps {
		if m.Kind == dso.Anon && m.Exec {
			c := *m
			c.Kind = dso.JIT
			p.space.maps[i] = &c
		}
	}
}

// fork takes a FORK record.
func (t *Tracker) fork(pid, ppid uint32) {
	if pid == ppid {
		// A new thread of an existing process: maps are shared.
		t.proc(pid)
		return
	}
	child := &process{pid: pid, gen: t.bump()}
	if parent := t.procs[ppid]; parent != nil {
		child.space = parent.space.clone()
		child.comm = parent.comm
		// Not jitMap: inherited JIT maps keep their kind, but the child's
		// own new code is described, if at all, by /tmp/perf-CHILD.map,
		// which HasPerfMap is asked about separately.
	} else {
		child.space = &space{}
	}
	t.procs[pid] = child // replaces a process whose pid was reused
	t.last = nil
}

// comm takes a COMM record; exec is PERF_RECORD_MISC_COMM_EXEC.
func (t *Tracker) comm(pid, tid uint32, comm string, exec bool) {
	p := t.proc(pid)
	if exec {
		p.space = &space{}
		p.gen = t.bump()
	}
	if pid == tid || p.comm == "" {
		p.comm = comm
	}
	t.threads[tid] = comm
}

// find returns pid's process, or nil.
func (t *Tracker) find(pid uint32) *process {
	if p := t.last; p != nil && p.pid == pid {
		return p
	}
	p := t.procs[pid]
	if p != nil {
		t.last = p
	}
	return p
}

// Comm returns the last command name seen for pid: the main thread's, or
// the first thread's until the main thread names itself.
func (t *Tracker) Comm(pid uint32) string {
	if p := t.find(pid); p != nil {
		return p.comm
	}
	return ""
}

// ThreadComm returns the command name of thread tid as perf script prints
// it: the last COMM seen for that thread (prctl(PR_SET_NAME) names
// threads apart from their process), else the name of the thread it was
// forked from, else perf's name for a thread it has no COMM for, ":TID"
// (thread__new in tools/perf/util/thread.c, which prints the tid as a
// signed pid_t: ":-1" for the samples perf records with tid -1); the
// idle thread (tid 0) is "swapper" until a COMM names it.
func (t *Tracker) ThreadComm(tid uint32) string {
	if c, ok := t.threads[tid]; ok {
		return c
	}
	return ":" + strconv.FormatInt(int64(int32(tid)), 10)
}

// Lookup returns the mapping that covers ip in pid's address space for the
// given cpumode, or nil. Kernel and hypervisor modes look in the kernel
// maps; guest modes are not this machine's and return nil.
func (t *Tracker) Lookup(pid uint32, mode perfdata.CPUMode, ip uint64) *Mapping {
	m, _, _ := t.LookupSpan(pid, mode, ip)
	return m
}

// LookupSpan is Lookup that also returns a range [lo, hi) holding ip over
// which Lookup(pid, mode, ·) gives the same mapping until the maps change
// (Generation), so that a caller walking a callchain can skip the lookup
// of the addresses that follow in the same mapping. The range may be
// narrower than the mapping (ip alone where the answer is a fallback);
// hi < lo never holds but for hi 0, the end of the address space. With a
// nil mapping the range is ip's alone.
func (t *Tracker) LookupSpan(pid uint32, mode perfdata.CPUMode, ip uint64) (m *Mapping, lo, hi uint64) {
	switch mode {
	case perfdata.CPUModeKernel, perfdata.CPUModeHypervisor:
		m, lo, hi := t.kernel.lookupSpan(ip)
		if m != nil {
			return m, m.Start, m.Limit
		}
		// The kernel's own map covers what the modules do not: its
		// answer holds over the hole between them, within its range.
		if k := t.ktext; k != nil && ip >= k.Start && ip < k.Limit {
			lo = max(lo, k.Start)
			if hi == 0 || hi > k.Limit {
				hi = k.Limit
			}
			return k, lo, hi
		}
		return nil, ip, ip + 1
	case perfdata.CPUModeGuestKernel, perfdata.CPUModeGuestUser:
		return nil, ip, ip + 1
	}
	if p := t.find(pid); p != nil {
		if m := p.space.lookup(ip); m != nil {
			return m, m.Start, m.Limit
		}
	}
	// perf's thread__find_map falls back to the kernel maps for a user-mode
	// address that no user map covers (e.g. [vsyscall] or an unmarked
	// kernel address): try that before giving up.
	if m := t.kernel.lookup(ip); m != nil {
		return m, ip, ip + 1
	}
	return nil, ip, ip + 1
}

// Generation returns values that change whenever a Lookup for pid could
// answer differently: proc when pid's maps change, kernel when the
// kernel's do. Neither is ever reused, even when a pid is, so a caller
// may cache lookups keyed by them.
func (t *Tracker) Generation(pid uint32) (proc, kernel uint64) {
	if p := t.find(pid); p != nil {
		proc = p.gen
	}
	return proc, t.kgen
}

// Maps returns pid's current maps, sorted by address; for KernelPID, the
// modules' maps sorted by address, then the kernel's own.
func (t *Tracker) Maps(pid uint32) []*Mapping {
	if pid == KernelPID {
		out := append([]*Mapping(nil), t.kernel.maps...)
		if t.ktext != nil {
			out = append(out, t.ktext)
		}
		return out
	}
	if p := t.procs[pid]; p != nil {
		return append([]*Mapping(nil), p.space.maps...)
	}
	return nil
}
