package check

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
)

func mmap(t *Tracker, pid int32, start, length, pgoff uint64, path string) *Mapping {
	return t.Mmap(&MapEvent{PID: pid, TID: pid, Mode: perfdata.CPUModeUser, Start: start, Len: length, Pgoff: pgoff, Path: path, Exec: true})
}

func wantMap(t *testing.T, tr *Tracker, pid int32, ip uint64, path string, off uint64) {
	t.Helper()
	m := tr.Lookup(pid, perfdata.CPUModeUser, ip)
	if path == "" {
		if m != nil {
			t.Errorf("pid %d ip %#x: got %s, want no mapping", pid, ip, m.Path())
		}
		return
	}
	if m == nil {
		t.Errorf("pid %d ip %#x: no mapping, want %s", pid, ip, path)
		return
	}
	if m.Path() != path || m.Offset(ip) != off {
		t.Errorf("pid %d ip %#x: got %s+%#x, want %s+%#x", pid, ip, m.Path(), m.Offset(ip), path, off)
	}
}

func TestTrackerOverlapSplits(t *testing.T) {
	tr := NewTracker()
	mmap(tr, 10, 0x1000, 0x5000, 0x100000, "/a")
	// A new map in the middle splits /a in two; the right piece keeps its
	// file offsets (pgoff advances by what was cut).
	mmap(tr, 10, 0x2000, 0x1000, 0, "/b")
	wantMap(t, tr, 10, 0x1800, "/a", 0x100800)
	wantMap(t, tr, 10, 0x2800, "/b", 0x800)
	wantMap(t, tr, 10, 0x3800, "/a", 0x102800)
	wantMap(t, tr, 10, 0x5fff, "/a", 0x104fff)
	wantMap(t, tr, 10, 0x6000, "", 0)
	if n := len(tr.Maps(10)); n != 3 {
		t.Errorf("got %d maps, want 3", n)
	}
	// A map covering everything replaces all three.
	mmap(tr, 10, 0x0, 0x10000, 0, "/c")
	if n := len(tr.Maps(10)); n != 1 {
		t.Errorf("got %d maps after full overlap, want 1", n)
	}
	wantMap(t, tr, 10, 0x2800, "/c", 0x2800)
	// Overlap at the left edge only.
	mmap(tr, 10, 0xf000, 0x2000, 0, "/d")
	wantMap(t, tr, 10, 0xefff, "/c", 0xefff)
	wantMap(t, tr, 10, 0xf000, "/d", 0)
	wantMap(t, tr, 10, 0x10800, "/d", 0x1800)
}

func TestTrackerForkExecExit(t *testing.T) {
	tr := NewTracker()
	tr.Comm(1, 1, "parent", false)
	mmap(tr, 1, 0x400000, 0x1000, 0, "/bin/parent")
	mmap(tr, 1, 0x7f0000, 0x1000, 0, "/lib/libc.so")
	// A thread shares the maps: a later map is visible through the pid.
	tr.Fork(1, 1, 2, 1)
	mmap(tr, 1, 0x500000, 0x1000, 0, "/lib/late.so")
	wantMap(t, tr, 1, 0x500010, "/lib/late.so", 0x10)

	// A child process gets a copy: its later maps do not leak back.
	tr.Fork(3, 1, 3, 1)
	wantMap(t, tr, 3, 0x400010, "/bin/parent", 0x10)
	if c := tr.CommOf(3); c != "parent" {
		t.Errorf("child comm %q, want inherited %q", c, "parent")
	}
	mmap(tr, 3, 0x600000, 0x1000, 0, "/lib/child-only.so")
	wantMap(t, tr, 1, 0x600010, "", 0)

	// exec starts over: the parent's binary no longer answers in the child.
	tr.Comm(3, 3, "child", true)
	wantMap(t, tr, 3, 0x400010, "", 0)
	wantMap(t, tr, 3, 0x7f0010, "", 0)
	mmap(tr, 3, 0x400000, 0x2000, 0x1000, "/bin/child")
	wantMap(t, tr, 3, 0x400010, "/bin/child", 0x1010)
	wantMap(t, tr, 1, 0x400010, "/bin/parent", 0x10)

	// After EXIT the maps still answer (perf resolves through dead threads).
	tr.Exit(3, 3)
	wantMap(t, tr, 3, 0x400010, "/bin/child", 0x1010)

	// pid reuse: a new FORK for pid 3 forgets the old process.
	tr.Fork(3, 1, 3, 1)
	wantMap(t, tr, 3, 0x400010, "/bin/parent", 0x10)
	wantMap(t, tr, 3, 0x600010, "", 0)
}

func TestTrackerKernel(t *testing.T) {
	tr := NewTracker()
	// As perf synthesizes them: the kernel text first (pgoff = start, len to
	// the end of _etext or beyond), then modules that lie above it.
	tr.Mmap(&MapEvent{PID: -1, Mode: perfdata.CPUModeKernel, Start: 0xffffffff81000000, Len: ^uint64(0) - 0xffffffff81000000, Pgoff: 0xffffffff81000000, Path: "[kernel.kallsyms]_text", Exec: true})
	tr.Mmap(&MapEvent{PID: -1, Mode: perfdata.CPUModeKernel, Start: 0xffffffffc0000000, Len: 0x5000, Path: "/lib/modules/6.1/kernel/fs/xfs.ko", Exec: true})
	mmap(tr, 7, 0x400000, 0x1000, 0, "/bin/x")

	m := tr.Lookup(7, perfdata.CPUModeKernel, 0xffffffff81234567)
	if m == nil || m.Kind != dso.Kernel || m.Offset(0xffffffff81234567) != 0xffffffff81234567 {
		t.Fatalf("kernel text lookup: %+v", m)
	}
	m = tr.Lookup(7, perfdata.CPUModeKernel, 0xffffffffc0001234)
	if m == nil || m.Kind != dso.Module || m.Offset(0xffffffffc0001234) != 0x1234 {
		t.Fatalf("module lookup: %+v", m)
	}
	// Any pid sees the same kernel.
	if m := tr.Lookup(99, perfdata.CPUModeKernel, 0xffffffff81000010); m == nil || m.Kind != dso.Kernel {
		t.Fatalf("kernel lookup from unknown pid: %+v", m)
	}
	// A user-mode lookup of a user address does not find kernel maps, and a
	// guest address finds nothing.
	if m := tr.Lookup(7, perfdata.CPUModeUser, 0x400010); m == nil || m.Kind != dso.File {
		t.Fatalf("user lookup: %+v", m)
	}
	if m := tr.Lookup(7, perfdata.CPUModeGuestKernel, 0xffffffff81000010); m != nil {
		t.Fatalf("guest lookup found %+v", m)
	}
}

func TestClassify(t *testing.T) {
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
		if got := classify(&MapEvent{PID: 5, Mode: perfdata.CPUModeUser, Path: path}); got != want {
			t.Errorf("classify(%q) = %v, want %v", path, got, want)
		}
	}
	tr := NewTracker()
	tr.SetJITMap(5)
	m := tr.Mmap(&MapEvent{PID: 5, Mode: perfdata.CPUModeUser, Start: 0x1000, Len: 0x1000, Path: "//anon", Exec: true})
	if m.Kind != dso.JIT {
		t.Errorf("anon exec map with a perf map: %v, want jit", m.Kind)
	}
}

// Many maps in one process, inserted in both directions, stay sorted and
// answer for every address.
func TestTrackerManyMaps(t *testing.T) {
	tr := NewTracker()
	const n = 2000
	for i := 0; i < n; i++ {
		k := uint64(i)
		if i%2 == 1 {
			k = uint64(n*2 - i) // interleave high and low addresses
		}
		mmap(tr, 3, 0x10000000+k*0x2000, 0x1000, k*0x1000, "/lib/l"+strconv.Itoa(int(k)))
	}
	maps := tr.Maps(3)
	if len(maps) != n {
		t.Fatalf("%d maps, want %d", len(maps), n)
	}
	for i := 1; i < len(maps); i++ {
		if maps[i-1].Limit > maps[i].Start {
			t.Fatalf("maps %d and %d overlap or are unsorted", i-1, i)
		}
	}
	for _, m := range maps {
		if got := tr.Lookup(3, perfdata.CPUModeUser, m.Start+5); got != m {
			t.Fatalf("lookup %#x: %v", m.Start+5, got)
		}
	}
}

// The tracker against a naive model: every page remembers which map last
// covered it and at which file offset. Random overlapping maps must give
// the same answer for every page.
func TestTrackerOverlapModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		tr := NewTracker()
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
		if t.Failed() {
			t.Fatalf("round %d", round)
		}
	}
}
