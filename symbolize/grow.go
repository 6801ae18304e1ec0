package symbolize

import (
	"slices"
	"unsafe"
)

// growBuf is a slice under construction whose backing array leaves the Go
// heap once it is large: a unit's tables are built in growBufs and then
// copied, at their exact size, into the unit's own mapping (moveOffHeap).
// Grown on the heap, a large unit's tables were live heap while it was
// decoded, with up to half of each slice unused and the previous,
// half-size array not yet collected; the collector's goal is a multiple
// of the live heap at its last collection, so the largest unit's decode
// set the heap's high-water mark for the whole run (gctrace: 7 MB live
// during decoding, 11 MB goal, against 6 MB live after it). Off the heap
// the tables under construction cost only the pages they fill, and are
// given back (free) as soon as the unit's tables are copied out.
//
// Small slices stay on the heap (a mapping is whole pages); a slice
// moves to anonymous memory when it would grow past growMapMin bytes,
// and from there grows in place or by moving its pages (mremap, no
// copy), or where that is not available by mapping anew and copying.
// Where nothing can be mapped, it stays on the heap.
//
// T must hold no pointers: the garbage collector does not scan the
// mapping. The slice is g.s, read and written in place; it must be
// grown through add, addSlice or reserve (never by append past its
// capacity, which would copy it to the heap and leave the mapping
// behind), and no other slice of it may be kept across a call that
// grows it, nor past free: the pages move or are unmapped, and a stale
// pointer into a range the runtime maps for its heap later makes the
// garbage collector throw.
type growBuf[T any] struct {
	s   []T
	mem []byte // the mapping backing s; nil while s is on the heap
}

// growMapMin is the size above which a growBuf leaves the heap.
const growMapMin = 32 << 10

// add appends v.
func (g *growBuf[T]) add(v T) {
	if len(g.s) == cap(g.s) {
		g.reserve(1)
	}
	g.s = append(g.s, v)
}

// addSlice appends vs.
func (g *growBuf[T]) addSlice(vs []T) {
	if cap(g.s)-len(g.s) < len(vs) {
		g.reserve(len(vs))
	}
	g.s = append(g.s, vs...)
}

// reserve makes room for n more elements: g.s's capacity at least doubles
// when it grows, so that appending costs amortized constant time.
func (g *growBuf[T]) reserve(n int) {
	need := len(g.s) + n
	if n <= 0 || need <= cap(g.s) {
		return
	}
	size := int(unsafe.Sizeof(*new(T)))
	c := max(need, 2*cap(g.s), 8)
	if c > maxInt/size {
		c = need // as large as can be asked; make or the mapping fails
	}
	if g.mem == nil && c*size < growMapMin {
		g.s = slices.Grow(g.s, c-len(g.s))
		return
	}
	old := g.mem
	mem, err := growMapping(old, c*size, len(g.s)*size)
	if err != nil {
		// Nothing mapped: on to the heap, where it goes on growing.
		s := make([]T, len(g.s), c)
		copy(s, g.s)
		g.free()
		g.s = s
		return
	}
	if g.mem == nil && len(g.s) > 0 {
		copy(mem, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(g.s))), len(g.s)*size))
	}
	if old != nil && unsafe.SliceData(old) != unsafe.SliceData(mem) && testHookGrowRelease != nil {
		testHookGrowRelease(old) // moved: the old range is unmapped
	}
	n0 := len(g.s)
	g.mem = mem
	g.s = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), len(mem)/size)[:n0]
}

// free unmaps g's mapping, if any, and empties g.
func (g *growBuf[T]) free() {
	if g.mem != nil {
		freeMapping(g.mem)
		if testHookGrowRelease != nil {
			testHookGrowRelease(g.mem)
		}
		if testHookGrowFree != nil {
			testHookGrowFree(g.mem)
		}
	}
	g.s, g.mem = nil, nil
}

// offHeap reports whether g.s lives in a mapping (tests).
func (g *growBuf[T]) offHeap() bool { return g.mem != nil }

// testHookGrowRelease, when set, is told of each mapping range a growBuf
// gave up, after it was unmapped (tests: nothing may point there
// afterwards). Only the range's address matters.
var testHookGrowRelease func(mem []byte)

// testHookGrowFree, when set, is told of each mapping free gave up (not
// those growth moved), after it was unmapped (tests).
var testHookGrowFree func(mem []byte)

const maxInt = int(^uint(0) >> 1)
