package symbolize

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// offHeapMoved and offHeapReleased count units whose tables went off the
// heap and mappings released by their cleanup (tests).
var offHeapMoved, offHeapReleased atomic.Int64

// offHeapMin is the smallest unit whose tables move off the heap: a
// mapping is whole pages, so smaller units would waste more than they save.
const offHeapMin = 16 << 10

// moveOffHeap moves the unit's pointer-free tables (packed line rows,
// scopes, ranges and their search indexes: nine tenths of a decoded unit)
// into one anonymous mapping, as region does for section bytes: the
// garbage collector sizes the heap from what it scans, so long-lived
// tables held on the heap let it grow by their size again before each
// collection, while off the heap they count once. The mapping is released
// by a cleanup when the unitInfo becomes unreachable: lookups reach the
// tables only through their *unitInfo (unitInfo.frames keeps it alive
// until done), so eviction and Close need no extra care. Where mapping is
// not available the tables stay on the heap.
//
// It reports whether the tables moved.
func (ui *unitInfo) moveOffHeap() bool {
	var size uintptr
	size = need(size, ui.lines.blockAddr)
	size = need(size, ui.lines.blockOff)
	size = need(size, ui.lines.data)
	size = need(size, ui.extra)
	size = need(size, ui.kids)
	size = need(size, ui.kidsHi)
	size = need(size, ui.kidRuns)
	size = need(size, ui.scopes)
	size = need(size, ui.roots)
	size = need(size, ui.rootHi)
	size = need(size, ui.wide)
	if size < offHeapMin {
		return false
	}
	r, err := mapAnon(int64(size), true)
	if err != nil {
		return false
	}
	var off uintptr
	ui.lines.blockAddr = place(r.data, &off, ui.lines.blockAddr)
	ui.lines.blockOff = place(r.data, &off, ui.lines.blockOff)
	ui.lines.data = place(r.data, &off, ui.lines.data)
	ui.extra = place(r.data, &off, ui.extra)
	ui.kids = place(r.data, &off, ui.kids)
	ui.kidsHi = place(r.data, &off, ui.kidsHi)
	ui.kidRuns = place(r.data, &off, ui.kidRuns)
	ui.scopes = place(r.data, &off, ui.scopes)
	ui.roots = place(r.data, &off, ui.roots)
	ui.rootHi = place(r.data, &off, ui.rootHi)
	ui.wide = place(r.data, &off, ui.wide)
	offHeapMoved.Add(1)
	runtime.AddCleanup(ui, func(r *region) {
		r.unmap()
		offHeapReleased.Add(1)
	}, r)
	return true
}

// need adds the aligned size of s to size.
func need[T any](size uintptr, s []T) uintptr {
	var zero T
	a := unsafe.Alignof(zero)
	return (size+a-1)&^(a-1) + uintptr(len(s))*unsafe.Sizeof(zero)
}

// place copies s to mem at *off (aligned for T) and returns the copy. T
// must hold no pointers: the garbage collector does not scan mem.
func place[T any](mem []byte, off *uintptr, s []T) []T {
	if len(s) == 0 {
		return nil
	}
	var zero T
	a := unsafe.Alignof(zero)
	*off = (*off + a - 1) &^ (a - 1)
	d := unsafe.Slice((*T)(unsafe.Pointer(&mem[*off])), len(s))
	copy(d, s)
	*off += uintptr(len(s)) * unsafe.Sizeof(zero)
	return d[:len(s):len(s)]
}
