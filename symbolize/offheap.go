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
// The tables are in b's buffers (ui's slices are theirs); each buffer is
// freed as soon as its table is copied, so that the unit's tables are not
// resident twice over at any moment (the mapping's pages are not
// populated ahead: they become resident as the copies fill them).
//
// It reports whether the tables moved; when they did not, b is untouched.
func (ui *unitInfo) moveOffHeap(b *unitBuild) bool {
	size := ui.tablesSize()
	if size < offHeapMin {
		return false
	}
	r, err := mapAnon(int64(size), false)
	if err != nil {
		return false
	}
	ui.packTables(r.data, b)
	offHeapMoved.Add(1)
	runtime.AddCleanup(ui, func(r *region) {
		r.unmap()
		offHeapReleased.Add(1)
	}, r)
	return true
}

// packOnHeap copies the unit's tables into one run of words of their size
// from words (what a unit too small for a mapping of its own gets): nine
// objects of as many size classes each, for each of the compiler's 160
// small units, were allocated among the decoding's garbage and left spans
// part-empty for the rest of the batch.
func (ui *unitInfo) packOnHeap(b *unitBuild, words *slab[uint64]) {
	// As uint64s: aligned for every table.
	w := words.alloc(int((ui.tablesSize() + 7) / 8))
	if len(w) == 0 {
		ui.packTables(nil, b)
		return
	}
	ui.packTables(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w)), b)
}

// tablesSize is the bytes packTables needs.
func (ui *unitInfo) tablesSize() uintptr {
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
	return size
}

// packTables copies the unit's tables into mem, tablesSize bytes aligned
// for a uint64, freeing each of b's buffers once its
// table is copied.
func (ui *unitInfo) packTables(mem []byte, b *unitBuild) {
	var off uintptr
	placeFree(mem, &off, &ui.lines.blockAddr, &b.lines.addr)
	placeFree(mem, &off, &ui.lines.blockOff, &b.lines.off)
	placeFree(mem, &off, &ui.lines.data, &b.lines.data)
	placeFree(mem, &off, &ui.extra, &b.extra)
	placeFree(mem, &off, &ui.kids, &b.kids)
	placeFree(mem, &off, &ui.kidsHi, &b.kidsHi)
	placeFree(mem, &off, &ui.kidRuns, &b.kidRuns)
	placeFree(mem, &off, &ui.scopes, &b.scopes)
	placeFree(mem, &off, &ui.roots, &b.roots)
	placeFree(mem, &off, &ui.rootHi, &b.rootHi)
	placeFree(mem, &off, &ui.wide, &b.wide)
}

// placeFree moves the table *t into mem (place), then frees g, the build
// buffer that held it: once *t no longer points into it.
func placeFree[T any](mem []byte, off *uintptr, t *[]T, g *growBuf[T]) {
	*t = place(mem, off, *t)
	g.free()
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
