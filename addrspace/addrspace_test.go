package addrspace

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
)

// Misc bits of perf_event_header the tests set (include/uapi/linux/perf_event.h).
const (
	miscMmapData    = 1 << 13 // PERF_RECORD_MISC_MMAP_DATA
	miscCommExec    = 1 << 13 // PERF_RECORD_MISC_COMM_EXEC
	miscMmapBuildID = 1 << 14 // PERF_RECORD_MISC_MMAP_BUILD_ID
)

func header(t perfdata.RecordType, mode perfdata.CPUMode, misc uint16) perfdata.RecordHeader {
	return perfdata.RecordHeader{RecType: t, Misc: uint16(mode) | misc, EventIndex: -1}
}

// mmap feeds an executable user MMAP record of pid.
func mmap(t *Tracker, pid uint32, start, length, pgoff uint64, path string) *Mapping {
	return t.Update(&perfdata.Mmap{RecordHeader: header(perfdata.RecordMmap, perfdata.CPUModeUser, 0),
		PID: pid, TID: pid, Addr: start, Len: length, PgOff: pgoff, Filename: path})
}

// kmmap feeds a kernel MMAP record as perf synthesizes them (pid -1).
func kmmap(t *Tracker, start, length, pgoff uint64, path string) *Mapping {
	return t.Update(&perfdata.Mmap{RecordHeader: header(perfdata.RecordMmap, perfdata.CPUModeKernel, 0),
		PID: KernelPID, TID: 0, Addr: start, Len: length, PgOff: pgoff, Filename: path})
}

func comm(t *Tracker, pid, tid uint32, name string, exec bool) {
	var misc uint16
	if exec {
		misc = miscCommExec
	}
	t.Update(&perfdata.Comm{RecordHeader: header(perfdata.RecordComm, perfdata.CPUModeUser, misc),
		PID: pid, TID: tid, Comm: name})
}

func fork(t *Tracker, pid, ppid, tid, ptid uint32) {
	t.Update(&perfdata.Fork{RecordHeader: header(perfdata.RecordFork, perfdata.CPUModeUser, 0),
		PID: pid, PPID: ppid, TID: tid, PTID: ptid})
}

// wantMap checks that ip of pid is at offset off of path ("": no mapping).
func wantMap(t *testing.T, tr *Tracker, pid uint32, ip uint64, path string, off uint64) {
	t.Helper()
	m := tr.Lookup(pid, perfdata.CPUModeUser, ip)
	if path == "" {
		assert.Nil(t, m, "pid %d ip %#x", pid, ip)
		return
	}
	if assert.NotNil(t, m, "pid %d ip %#x: want %s", pid, ip, path) {
		assert.Equal(t, path, m.Path, "pid %d ip %#x", pid, ip)
		assert.Equal(t, off, m.Offset(ip), "pid %d ip %#x", pid, ip)
	}
}

func TestOverlapSplits(t *testing.T) {
	t.Parallel()
	tr := New()
	a := mmap(tr, 10, 0x1000, 0x5000, 0x100000, "/a")
	// A new map in the middle splits /a in two; the right piece keeps its
	// file offsets (pgoff advances by what was cut).
	mmap(tr, 10, 0x2000, 0x1000, 0, "/b")
	wantMap(t, tr, 10, 0x1800, "/a", 0x100800)
	wantMap(t, tr, 10, 0x2800, "/b", 0x800)
	wantMap(t, tr, 10, 0x3800, "/a", 0x102800)
	wantMap(t, tr, 10, 0x5fff, "/a", 0x104fff)
	wantMap(t, tr, 10, 0x6000, "", 0)
	require.Len(t, tr.Maps(10), 3)
	// Both pieces of /a are still the record that made /a.
	assert.Equal(t, a.ID, tr.Lookup(10, perfdata.CPUModeUser, 0x1800).ID)
	assert.Equal(t, a.ID, tr.Lookup(10, perfdata.CPUModeUser, 0x3800).ID)
	// The Mapping returned first is unchanged by the split.
	assert.Equal(t, uint64(0x6000), a.Limit)

	// A map covering everything replaces all three.
	mmap(tr, 10, 0x0, 0x10000, 0, "/c")
	require.Len(t, tr.Maps(10), 1)
	wantMap(t, tr, 10, 0x2800, "/c", 0x2800)
	// Overlap at the left edge only.
	mmap(tr, 10, 0xf000, 0x2000, 0, "/d")
	wantMap(t, tr, 10, 0xefff, "/c", 0xefff)
	wantMap(t, tr, 10, 0xf000, "/d", 0)
	wantMap(t, tr, 10, 0x10800, "/d", 0x1800)
}

func TestForkExecExit(t *testing.T) {
	t.Parallel()
	tr := New()
	comm(tr, 1, 1, "parent", false)
	mmap(tr, 1, 0x400000, 0x1000, 0, "/bin/parent")
	mmap(tr, 1, 0x7f0000, 0x1000, 0, "/lib/libc.so")
	// A thread shares the maps: a later map is visible through the pid.
	fork(tr, 1, 1, 2, 1)
	mmap(tr, 1, 0x500000, 0x1000, 0, "/lib/late.so")
	wantMap(t, tr, 1, 0x500010, "/lib/late.so", 0x10)

	// A child process gets a copy: its later maps do not leak back.
	fork(tr, 3, 1, 3, 1)
	wantMap(t, tr, 3, 0x400010, "/bin/parent", 0x10)
	assert.Equal(t, "parent", tr.Comm(3), "the child inherits its parent's comm")
	mmap(tr, 3, 0x600000, 0x1000, 0, "/lib/child-only.so")
	wantMap(t, tr, 1, 0x600010, "", 0)

	// exec starts over: the parent's binary no longer answers in the child.
	comm(tr, 3, 3, "child", true)
	assert.Equal(t, "child", tr.Comm(3))
	wantMap(t, tr, 3, 0x400010, "", 0)
	wantMap(t, tr, 3, 0x7f0010, "", 0)
	mmap(tr, 3, 0x400000, 0x2000, 0x1000, "/bin/child")
	wantMap(t, tr, 3, 0x400010, "/bin/child", 0x1010)
	wantMap(t, tr, 1, 0x400010, "/bin/parent", 0x10)

	// After EXIT the maps still answer (perf resolves through dead threads).
	assert.Nil(t, tr.Update(&perfdata.Exit{RecordHeader: header(perfdata.RecordExit, perfdata.CPUModeUser, 0), PID: 3, TID: 3}))
	wantMap(t, tr, 3, 0x400010, "/bin/child", 0x1010)

	// pid reuse: a new FORK for pid 3 forgets the old process.
	fork(tr, 3, 1, 3, 1)
	wantMap(t, tr, 3, 0x400010, "/bin/parent", 0x10)
	wantMap(t, tr, 3, 0x600010, "", 0)
}

// With ForgetExited, the EXIT of a main thread forgets its process, as
// perf buildid-list does; a thread's EXIT does not.
func TestForgetExited(t *testing.T) {
	t.Parallel()
	tr := New()
	tr.ForgetExited = true
	exit := func(pid, tid uint32) {
		assert.Nil(t, tr.Update(&perfdata.Exit{RecordHeader: header(perfdata.RecordExit, perfdata.CPUModeUser, 0), PID: pid, TID: tid}))
	}
	comm(tr, 1, 1, "proc", false)
	mmap(tr, 1, 0x400000, 0x1000, 0, "/bin/proc")
	fork(tr, 1, 1, 2, 1)
	exit(1, 2)
	wantMap(t, tr, 1, 0x400010, "/bin/proc", 0x10)
	exit(1, 1)
	wantMap(t, tr, 1, 0x400010, "", 0)
	assert.Empty(t, tr.Comm(1))
	mmap(tr, 1, 0x500000, 0x1000, 0, "/bin/next")
	wantMap(t, tr, 1, 0x500010, "/bin/next", 0x10)
	wantMap(t, tr, 1, 0x400010, "", 0)
}

// A thread's COMM names the process only until the main thread names it.
func TestCommThreads(t *testing.T) {
	t.Parallel()
	tr := New()
	comm(tr, 4, 5, "worker", false)
	assert.Equal(t, "worker", tr.Comm(4))
	comm(tr, 4, 4, "main", false)
	comm(tr, 4, 6, "other", false)
	assert.Equal(t, "main", tr.Comm(4))
	assert.Equal(t, "", tr.Comm(99))
}

func TestKernel(t *testing.T) {
	t.Parallel()
	tr := New()
	// As perf synthesizes them: the kernel text first (pgoff = start, len to
	// the end of _etext or beyond), then modules that lie above it.
	k := kmmap(tr, 0xffffffff81000000, ^uint64(0)-0xffffffff81000000, 0xffffffff81000000, "[kernel.kallsyms]_text")
	kmmap(tr, 0xffffffffc0000000, 0x5000, 0, "/lib/modules/6.1/kernel/fs/xfs.ko")
	mmap(tr, 7, 0x400000, 0x1000, 0, "/bin/x")
	assert.Equal(t, KernelPID, k.PID)

	m := tr.Lookup(7, perfdata.CPUModeKernel, 0xffffffff81234567)
	require.NotNil(t, m)
	assert.Equal(t, dso.Kernel, m.Kind)
	assert.Equal(t, uint64(0xffffffff81234567), m.Offset(0xffffffff81234567))
	m = tr.Lookup(7, perfdata.CPUModeKernel, 0xffffffffc0001234)
	require.NotNil(t, m)
	assert.Equal(t, dso.Module, m.Kind)
	assert.Equal(t, uint64(0x1234), m.Offset(0xffffffffc0001234))
	// Any pid sees the same kernel.
	m = tr.Lookup(99, perfdata.CPUModeKernel, 0xffffffff81000010)
	require.NotNil(t, m)
	assert.Equal(t, dso.Kernel, m.Kind)
	// A user-mode lookup of a user address does not find kernel maps, and
	// a guest address finds nothing.
	m = tr.Lookup(7, perfdata.CPUModeUser, 0x400010)
	require.NotNil(t, m)
	assert.Equal(t, dso.File, m.Kind)
	assert.Nil(t, tr.Lookup(7, perfdata.CPUModeGuestKernel, 0xffffffff81000010))
	// A user-mode address that no user map covers falls back to the
	// modules, as perf's thread__find_map does.
	m = tr.Lookup(7, perfdata.CPUModeUser, 0xffffffffc0000010)
	require.NotNil(t, m)
	assert.Equal(t, dso.Module, m.Kind)

	maps := tr.Maps(KernelPID)
	require.Len(t, maps, 2)
	assert.Equal(t, dso.Module, maps[0].Kind)
	assert.Same(t, k, maps[1])
}

// An MMAP2 record's identity comes through in either of its forms.
func TestMmap2Identity(t *testing.T) {
	t.Parallel()
	tr := New()
	id := buildid.ID{0xde, 0xad, 0xbe, 0xef}
	r := &perfdata.Mmap2{RecordHeader: header(perfdata.RecordMmap2, perfdata.CPUModeUser, miscMmapBuildID),
		PID: 2, TID: 2, Addr: 0x1000, Len: 0x1000, Filename: "/bin/a", BuildID: id, Prot: 5, Flags: 2}
	r.SampleID.Time = 42
	m := tr.Update(r)
	id[0] = 0 // perfdata reuses the record's storage: the tracker keeps a copy
	require.NotNil(t, m)
	assert.Equal(t, buildid.ID{0xde, 0xad, 0xbe, 0xef}, m.BuildID)
	assert.False(t, m.HasDevIno)
	assert.Equal(t, uint64(42), m.Time)
	assert.Equal(t, uint32(5), m.Prot)
	assert.Equal(t, uint32(2), m.Flags)
	assert.True(t, m.Exec)

	m = tr.Update(&perfdata.Mmap2{RecordHeader: header(perfdata.RecordMmap2, perfdata.CPUModeUser, miscMmapData),
		PID: 2, TID: 2, Addr: 0x3000, Len: 0x1000, Filename: "/bin/b", Maj: 8, Min: 1, Ino: 77, InoGeneration: 3})
	require.NotNil(t, m)
	assert.Nil(t, m.BuildID)
	assert.True(t, m.HasDevIno)
	assert.Equal(t, []uint64{8, 1, 77, 3}, []uint64{uint64(m.Maj), uint64(m.Min), m.Ino, m.InoGeneration})
	assert.False(t, m.Exec)
	assert.Equal(t, 1, m.ID)
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]dso.Kind{
		"/usr/lib/libc.so.6": dso.File,
		"[vdso]":             dso.VDSO,
		"[vsyscall]":         dso.Vsyscall,
		"//anon":             dso.Anon,
		"[heap]":             dso.Anon,
		"[stack]":            dso.Anon,
		"[anon:v8]":          dso.Anon,
		"":                   dso.Anon,
	} {
		assert.Equal(t, want, classify(path, 0, false), "classify(%q)", path)
	}
	assert.Equal(t, dso.Kernel, classify("[kernel.kallsyms]_text", 0, true))
	assert.Equal(t, dso.Module, classify("[xfs]", 0, true))

	// Memory mapped with MAP_HUGETLB is anonymous whatever its name, as
	// for perf's map__new: a hugetlbfs file (libhugetlbfs copies a
	// program's text there) is not the binary that ran.
	const hugetlbfs = "/dev/hugepages/libhugetlbfs.tmp.Ab12Cd (deleted)"
	assert.Equal(t, dso.File, classify(hugetlbfs, 0, false))
	tr := New()
	m := tr.Update(&perfdata.Mmap2{RecordHeader: header(perfdata.RecordMmap2, perfdata.CPUModeUser, 0),
		PID: 1, TID: 1, Addr: 0x400000, Len: 0x200000, Prot: 5, Flags: mapHugeTLB | 0x02, Filename: hugetlbfs})
	assert.Equal(t, dso.Anon, m.Kind)
}

// A process with a perf map has JIT code in its anonymous executable maps,
// those made before the question too; its data maps stay anonymous. It is
// asked once per process.
func TestPerfMap(t *testing.T) {
	t.Parallel()
	var asked []uint32
	tr := New()
	tr.HasPerfMap = func(pid uint32) bool {
		asked = append(asked, pid)
		return pid == 5
	}
	data := tr.Update(&perfdata.Mmap{RecordHeader: header(perfdata.RecordMmap, perfdata.CPUModeUser, miscMmapData),
		PID: 5, TID: 5, Addr: 0x1000, Len: 0x1000, Filename: "//anon"})
	assert.Equal(t, dso.Anon, data.Kind)
	m := mmap(tr, 5, 0x2000, 0x1000, 0, "//anon")
	assert.Equal(t, dso.JIT, m.Kind)
	mmap(tr, 5, 0x3000, 0x1000, 0, "//anon")
	assert.Equal(t, dso.Anon, tr.Lookup(5, perfdata.CPUModeUser, 0x1000).Kind)
	mmap(tr, 6, 0x2000, 0x1000, 0, "//anon")
	assert.Equal(t, dso.Anon, tr.Lookup(6, perfdata.CPUModeUser, 0x2000).Kind)
	assert.Equal(t, []uint32{5, 6}, asked)

	// A new process of pid 6 is asked again.
	fork(tr, 6, 1, 6, 1)
	mmap(tr, 6, 0x2000, 0x1000, 0, "//anon")
	assert.Equal(t, []uint32{5, 6, 6}, asked)
}

// Maps made before the perf map is known become JIT code once it is.
func TestPerfMapLate(t *testing.T) {
	t.Parallel()
	tr := New()
	tr.HasPerfMap = func(uint32) bool { return true }
	comm(tr, 8, 8, "java", false)
	// The first anonymous executable map asks; nothing before it changes.
	f := mmap(tr, 8, 0x1000, 0x1000, 0, "/bin/java")
	j := mmap(tr, 8, 0x9000, 0x1000, 0, "[anon:jit]")
	assert.Equal(t, dso.File, f.Kind)
	assert.Equal(t, dso.JIT, j.Kind)
}

// Generations change exactly when a lookup could answer differently.
func TestGeneration(t *testing.T) {
	t.Parallel()
	tr := New()
	mmap(tr, 1, 0x1000, 0x1000, 0, "/a")
	p1, k1 := tr.Generation(1)
	comm(tr, 1, 1, "a", false)
	p2, k2 := tr.Generation(1)
	assert.Equal(t, p1, p2, "a COMM without exec changes no map")
	assert.Equal(t, k1, k2)
	mmap(tr, 1, 0x2000, 0x1000, 0, "/b")
	p3, _ := tr.Generation(1)
	assert.NotEqual(t, p2, p3)
	kmmap(tr, 0xffffffffc0000000, 0x1000, 0, "/x.ko")
	p4, k4 := tr.Generation(1)
	assert.Equal(t, p3, p4)
	assert.NotEqual(t, k2, k4)
	// pid reuse never brings a generation back.
	fork(tr, 1, 0, 1, 0)
	p5, _ := tr.Generation(1)
	assert.NotContains(t, []uint64{p1, p3}, p5)
	p, _ := tr.Generation(42)
	assert.Zero(t, p, "an unknown pid")
}

// Records other than the address-space ones change nothing.
func TestUpdateIgnores(t *testing.T) {
	t.Parallel()
	tr := New()
	mmap(tr, 1, 0x1000, 0x1000, 0, "/a")
	p, k := tr.Generation(1)
	assert.Nil(t, tr.Update(&perfdata.Sample{}))
	assert.Nil(t, tr.Update(&perfdata.Lost{}))
	p2, k2 := tr.Generation(1)
	assert.Equal(t, []uint64{p, k}, []uint64{p2, k2})
}

// Many maps in one process, inserted in both directions, stay sorted and
// answer for every address.
func TestManyMaps(t *testing.T) {
	t.Parallel()
	tr := New()
	const n = 2000
	for i := 0; i < n; i++ {
		k := uint64(i)
		if i%2 == 1 {
			k = uint64(n*2 - i) // interleave high and low addresses
		}
		mmap(tr, 3, 0x10000000+k*0x2000, 0x1000, k*0x1000, "/lib/l"+strconv.Itoa(int(k)))
	}
	maps := tr.Maps(3)
	require.Len(t, maps, n)
	for i := 1; i < len(maps); i++ {
		require.LessOrEqual(t, maps[i-1].Limit, maps[i].Start, "maps %d and %d overlap or are unsorted", i-1, i)
	}
	for _, m := range maps {
		require.Same(t, m, tr.Lookup(3, perfdata.CPUModeUser, m.Start+5), "lookup %#x", m.Start+5)
	}
}

// The tracker against a naive model: every page remembers which map last
// covered it and at which file offset. Random overlapping maps must give
// the same answer for every page.
func TestOverlapModel(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		tr := New()
		type cell struct {
			path string
			off  uint64
		}
		const pages = 64
		model := make([]cell, pages)
		for k := 0; k < 20; k++ {
			start := rng.IntN(pages)
			length := 1 + rng.IntN(pages-start)
			pgoff := uint64(rng.IntN(100)) * 0x1000
			path := "/m" + strconv.Itoa(k)
			mmap(tr, 9, uint64(start)*0x1000, uint64(length)*0x1000, pgoff, path)
			for p := start; p < start+length; p++ {
				model[p] = cell{path, pgoff + uint64(p-start)*0x1000}
			}
		}
		for p := 0; p < pages; p++ {
			ip := uint64(p)*0x1000 + 0x10
			wantMap(t, tr, 9, ip, model[p].path, model[p].off+0x10)
		}
		require.False(t, t.Failed(), "round %d", round)
	}
}

// A mapping that runs past the top of the address space ends there.
func TestWrap(t *testing.T) {
	t.Parallel()
	tr := New()
	m := kmmap(tr, 0xffffffff81000000, 0x100000000, 0xffffffff81000000, "[kernel.kallsyms]_text")
	assert.Equal(t, ^uint64(0), m.Limit)
}

// TestThreadComm: names are per thread, as perf script prints them: a
// thread renamed with prctl keeps its own name, a new thread takes its
// parent thread's, the idle thread is swapper and a thread never named is
// ":TID".
func TestThreadComm(t *testing.T) {
	t.Parallel()
	tr := New()
	assert.Equal(t, "swapper", tr.ThreadComm(0))
	assert.Equal(t, ":66483", tr.ThreadComm(66483))
	assert.Equal(t, ":-1", tr.ThreadComm(0xffffffff), "perf prints the tid signed")
	comm(tr, 66475, 66475, "server", true)
	fork(tr, 66475, 66475, 66483, 66475)
	assert.Equal(t, "server", tr.ThreadComm(66483), "a new thread inherits its parent thread's name")
	comm(tr, 66475, 66483, "tokio-runtime-w", false)
	assert.Equal(t, "tokio-runtime-w", tr.ThreadComm(66483))
	assert.Equal(t, "server", tr.ThreadComm(66475))
	assert.Equal(t, "server", tr.Comm(66475), "the process keeps its main thread's name")
	fork(tr, 66475, 66475, 66484, 66483)
	assert.Equal(t, "tokio-runtime-w", tr.ThreadComm(66484), "forked from the renamed thread")
	fork(tr, 70000, 1, 66483, 1)
	assert.Equal(t, ":66483", tr.ThreadComm(66483), "a reused tid whose parent has no name")
}
