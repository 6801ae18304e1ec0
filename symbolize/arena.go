package symbolize

import (
	"unsafe"
)

// slab hands out slices of T carved from shared chunks of the heap, for
// what stays as long as a Binary or a decoded unit: symbol and function
// names, a unit's name and file tables, the tables of units too small for
// a mapping. One heap object each scattered them among the decoding's
// garbage: after a collection at the end of the Go compiler's
// 100,000-address batch, 1.7 MB of the heap's spans were free slots next
// to such objects (5.96 MB live in 7.65 MB of spans), which the process
// kept resident. Carved from chunks, they are dense, and a chunk is a
// span of its own.
//
// A chunk stays alive while any slice (or string) carved from it does:
// callers keep the strings Frames hands out after Close, so they may keep
// a chunk. So chunks suit what is never given back before the Binary is.
// Decoded units are, when the decoded DWARF outgrows its budget: once
// a unit is evicted, its slabs allocate exactly (exact), as they did
// before, so that an evicted unit's memory goes with it; with chunks
// every unit decoded again started new ones and kept them all alive
// (under a budget of 107 kB for a C program of 401 small units, 11.3 MB
// of heap against 1.9 MB with exact allocations).
//
// Not safe for concurrent use: each owner serializes its calls.
type slab[T any] struct {
	buf   []T  // the current chunk; its spare capacity is free
	exact bool // every allocation its own object, of its size
}

// slabChunk is the size of a chunk in bytes: the largest small-object
// size class, so that a chunk fills its span exactly. Requests over an
// eighth of it get an object of their own, so that at most an eighth of a
// chunk is left unused at its end.
const slabChunk = 32 << 10

// alloc returns n zeroed elements, its capacity n.
func (s *slab[T]) alloc(n int) []T {
	if n == 0 {
		return nil
	}
	var zero T
	size := unsafe.Sizeof(zero)
	if s.exact || uintptr(n) > slabChunk/8/max(size, 1) {
		return make([]T, n)
	}
	if n > cap(s.buf)-len(s.buf) {
		s.buf = make([]T, 0, slabChunk/max(size, 1))
	}
	k := len(s.buf)
	s.buf = s.buf[:k+n]
	return s.buf[k : k+n : k+n]
}

// copyOf returns a copy of v in the slab, its capacity its length.
func (s *slab[T]) copyOf(v []T) []T {
	d := s.alloc(len(v))
	copy(d, v)
	return d
}

// allocExact makes every later allocation an object of its own.
func (s *slab[T]) allocExact() { s.buf, s.exact = nil, true }

// unitSlabs are the slabs a dwarfIndex's decodes allocate from.
type unitSlabs struct {
	strs  strArena     // names read from DWARF
	names slab[string] // unitInfo.names
	files slab[uint32] // unitInfo.files
	words slab[uint64] // the tables of units kept on the heap (packOnHeap)
}

// allocExact makes every later allocation an object of its own (see
// slab): called as a unit is evicted.
func (k *unitSlabs) allocExact() {
	k.strs.allocExact()
	k.names.allocExact()
	k.files.allocExact()
	k.words.allocExact()
}

// strArena copies strings into a slab of bytes.
type strArena struct{ slab[byte] }

// clone returns a copy of str in the arena.
func (a *strArena) clone(str string) string {
	if len(str) == 0 {
		return ""
	}
	d := a.alloc(len(str))
	copy(d, str)
	return unsafe.String(&d[0], len(d))
}
