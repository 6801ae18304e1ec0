package check

import (
	"slices"
	"sort"
	"strings"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
)

// KernelPID is the pid perf gives the host kernel's maps: the synthesized
// "[kernel.kallsyms]_text" and module MMAP records carry pid -1
// (HOST_KERNEL_ID in tools/perf/util/machine.h).
const KernelPID = -1

// MapEvent is one MMAP or MMAP2 record, reduced to what address-space
// tracking and identity need. It is the tracker's own input type, so the
// tracker can be driven by synthetic events in tests.
type MapEvent struct {
	PID, TID int32
	Mode     perfdata.CPUMode // header.misc & PERF_RECORD_MISC_CPUMODE_MASK
	Start    uint64
	Len      uint64
	Pgoff    uint64
	Path     string
	Time     uint64 // perf clock; 0 for synthesized records without sample_id_all
	Exec     bool   // false when header.misc has PERF_RECORD_MISC_MMAP_DATA

	// MMAP2 only.
	HasDevIno bool // an MMAP2 record in the dev/inode form
	Maj, Min  uint32
	Ino       uint64
	InoGen    uint64
	BuildID   buildid.ID // MMAP2 in the build-id form (perf record --buildid-mmap)
	Prot      uint32
	Flags     uint32
}

// Mapping is one range of a process's (or the kernel's) address space.
// Mappings are immutable once created: a split creates new Mappings that
// share DSO, so a Mapping pointer may be held across later events.
type Mapping struct {
	Start, Limit uint64 // [Start, Limit)
	Pgoff        uint64 // file offset of Start; for the kernel, the address of _text
	Kind         dso.Kind
	PID          int32 // owning process, KernelPID for kernel maps
	Time         uint64
	Event        *MapEvent // the record that created it (after any split, the original)
	DSO          *DSO      // identity and verdict; set by the Session, nil in a bare Tracker
}

// Offset returns the file offset of ip, as perf's map__map_ip
// (tools/perf/util/map.h: ip - start + pgoff). For the kernel map perf sets
// pgoff to the start, so the offset of a kernel address is the address.
func (m *Mapping) Offset(ip uint64) uint64 { return ip - m.Start + m.Pgoff }

// Path is the recorded file name.
func (m *Mapping) Path() string { return m.Event.Path }

// space is a sorted, non-overlapping set of mappings.
type space struct {
	maps []*Mapping // sorted by Start, no overlaps
}

func (s *space) lookup(ip uint64) *Mapping {
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].Limit > ip })
	if i < len(s.maps) && s.maps[i].Start <= ip {
		return s.maps[i]
	}
	return nil
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
}

func (s *space) clone() *space {
	// Mappings are immutable, so a shallow copy is a full copy.
	return &space{maps: append([]*Mapping(nil), s.maps...)}
}

// process is the state kept per pid.
type process struct {
	gen    uint64 // changes whenever its maps do (Tracker.nextGen)
	pid    int32
	space  *space
	comm   string
	exited bool
	jitMap bool // a /tmp/perf-PID.map applies to its anonymous executable maps
}

// Tracker rebuilds the address spaces of a recording's processes and of the
// kernel from MMAP, MMAP2, FORK, COMM and EXIT events fed in the order perf
// delivers them (time order; see perfdata's ordered delivery). Lookup then
// answers, for a sample at that moment, which mapping covered an address.
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
//   - EXIT marks the process exited but keeps its maps: perf resolves
//     samples through a dead thread until its pid is reused.
//   - kernel maps (pid -1, or cpumode kernel) live in one kernel space;
//     kernel addresses are looked up there whatever the sample's pid.
//
// A Tracker is not safe for concurrent use.
type Tracker struct {
	procs  map[int32]*process
	kernel space    // modules and anything else perf puts in the kernel machine
	ktext  *Mapping // [kernel.kallsyms]_text: covers what modules do not
	onMap  func(*Mapping)
	// Generations let callers cache lookups: a process's gen and kgen
	// change whenever its maps or the kernel's do, and values are never
	// reused (nextGen only grows), even across pid reuse.
	nextGen uint64
	kgen    uint64
	// last caches the last process found by pid: samples come in runs of
	// one process, and each asks for its maps and its comm. Only Fork
	// replaces the process of a pid (the others change it in place), so
	// it is the only event that drops the cache.
	last *process
}

func (t *Tracker) bump() uint64 {
	t.nextGen++
	return t.nextGen
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{procs: make(map[int32]*process)}
}

func (t *Tracker) proc(pid int32) *process {
	p := t.find(pid)
	if p == nil {
		p = &process{pid: pid, space: &space{}, gen: t.bump()}
		t.procs[pid] = p
	}
	return p
}

// isKernelMap reports whether an MMAP record belongs to the kernel machine:
// perf synthesizes the kernel and module maps with pid -1 and a kernel
// cpumode (perf_event__synthesize_kernel_mmap, perf_event__synthesize_modules).
func isKernelMap(e *MapEvent) bool {
	return e.PID == KernelPID || e.Mode == perfdata.CPUModeKernel
}

// classify gives the Kind of a recorded file name, using perf's names
// (tools/perf/util/map.c: is_anon_memory, is_no_dso_memory, is_vdso_map).
func classify(e *MapEvent) dso.Kind {
	p := e.Path
	if isKernelMap(e) {
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
	case p == "" || p == "//anon" || p == "/dev/zero" || strings.HasPrefix(p, "/anon_hugepage") ||
		strings.HasPrefix(p, "[anon") || strings.HasPrefix(p, "/SYSV") ||
		p == "[heap]" || strings.HasPrefix(p, "[stack") || p == "[vvar]" ||
		strings.HasPrefix(p, "/memfd:"):
		return dso.Anon
	}
	return dso.File
}

// Mmap records an MMAP or MMAP2 event. Non-executable (data) maps are kept
// too: a sample can only hit executable ones, but they still cut existing
// ranges as the kernel's mmap did.
func (t *Tracker) Mmap(e *MapEvent) *Mapping {
	m := &Mapping{
		Start: e.Start,
		Limit: e.Start + e.Len,
		Pgoff: e.Pgoff,
		Kind:  classify(e),
		PID:   e.PID,
		Time:  e.Time,
		Event: e,
	}
	if m.Limit < m.Start { // wraps: perf's kernel map may run to ~0
		m.Limit = ^uint64(0)
	}
	if isKernelMap(e) {
		t.kgen = t.bump()
		m.PID = KernelPID
		if m.Kind == dso.Kernel {
			t.ktext = m
		} else {
			t.kernel.insert(m)
		}
	} else {
		p := t.proc(e.PID)
		p.gen = t.bump()
		if m.Kind == dso.Anon && e.Exec && p.jitMap {
			m.Kind = dso.JIT
		}
		p.space.insert(m)
	}
	if t.onMap != nil {
		t.onMap(m)
	}
	return m
}

// Fork records a FORK event.
func (t *Tracker) Fork(pid, ppid, tid, ptid int32) {
	if pid == ppid {
		// A new thread of an existing process: maps are shared.
		t.proc(pid)
		return
	}
	child := &process{pid: pid, gen: t.bump()}
	if parent := t.procs[ppid]; parent != nil {
		child.space = parent.space.clone()
		child.comm = parent.comm
		// Not jitMap: inherited JIT maps keep the parent's perf map (their
		// DSO), but the child's own new code is described, if at all, by
		// /tmp/perf-CHILD.map, which the Session looks for separately.
	} else {
		child.space = &space{}
	}
	t.procs[pid] = child // replaces a process whose pid was reused
	t.last = nil
}

// Comm records a COMM event; exec is PERF_RECORD_MISC_COMM_EXEC.
func (t *Tracker) Comm(pid, tid int32, comm string, exec bool) {
	p := t.proc(pid)
	if exec {
		p.space = &space{}
		p.exited = false
		p.gen = t.bump()
	}
	if pid == tid || p.comm == "" {
		p.comm = comm
	}
}

// Exit records an EXIT event.
func (t *Tracker) Exit(pid, tid int32) {
	if p := t.find(pid); p != nil && pid == tid {
		p.exited = true
	}
}

// SetJITMap says that pid's anonymous executable maps are described by a
// perf map file (/tmp/perf-PID.map), as perf's thread__find_map decides
// for anonymous memory.
func (t *Tracker) SetJITMap(pid int32) {
	p := t.proc(pid)
	p.jitMap = true
	p.gen = t.bump()
	for i, m := range p.space.maps {
		if m.Kind == dso.Anon && m.Event.Exec {
			c := *m
			c.Kind = dso.JIT
			p.space.maps[i] = &c
		}
	}
}

// find returns pid's process, or nil.
func (t *Tracker) find(pid int32) *process {
	if p := t.last; p != nil && p.pid == pid {
		return p
	}
	p := t.procs[pid]
	if p != nil {
		t.last = p
	}
	return p
}

// CommOf returns the last command name seen for pid.
func (t *Tracker) CommOf(pid int32) string {
	if p := t.find(pid); p != nil {
		return p.comm
	}
	return ""
}

// Lookup returns the mapping that covers ip in pid's address space for the
// given cpumode, or nil. Kernel and hypervisor modes look in the kernel
// maps; guest modes are not this machine's and return nil.
func (t *Tracker) Lookup(pid int32, mode perfdata.CPUMode, ip uint64) *Mapping {
	switch mode {
	case perfdata.CPUModeKernel, perfdata.CPUModeHypervisor:
		if m := t.kernel.lookup(ip); m != nil {
			return m
		}
		if k := t.ktext; k != nil && ip >= k.Start && ip < k.Limit {
			return k
		}
		return nil
	case perfdata.CPUModeGuestKernel, perfdata.CPUModeGuestUser:
		return nil
	}
	if p := t.find(pid); p != nil {
		if m := p.space.lookup(ip); m != nil {
			return m
		}
	}
	// perf's thread__find_map falls back to the kernel maps for a user-mode
	// address that no user map covers (e.g. [vsyscall] or an unmarked
	// kernel address): try that before giving up.
	if m := t.kernel.lookup(ip); m != nil {
		return m
	}
	return nil
}

// generation returns a value that changes whenever a lookup for pid could
// answer differently: pid's maps or the kernel's changed.
func (t *Tracker) generation(pid int32) (uint64, uint64) {
	var g uint64
	if p := t.find(pid); p != nil {
		g = p.gen
	}
	return g, t.kgen
}

// Maps returns pid's current maps, sorted by address (for tests and tools).
func (t *Tracker) Maps(pid int32) []*Mapping {
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
