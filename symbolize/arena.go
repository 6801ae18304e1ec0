package symbolize

import (
	"strings"
	"unsafe"
)

// strArena copies strings that stay for the life of a Binary (symbol
// names, function names read from DWARF) into shared chunks of the heap.
// One heap object per name scattered them among the decoding's garbage of
// the same size classes: after a collection at the end of the Go
// compiler's 100,000-address batch, 1.7 MB of the heap's spans were free
// slots next to live names (5.96 MB live in 7.65 MB of spans), which the
// process kept resident. In chunks the names are dense, and a chunk is a
// span of its own.
//
// A chunk stays alive while any string in it does: callers keep the
// strings Frames hands out after Close, so they may keep a chunk. When
// the strings of a chunk belong to an evicted unit and are decoded again,
// the new copies go to a new chunk (see dwarfIndex.evict), so eviction
// frees what it evicts once the old units are collected.
//
// Not safe for concurrent use: each owner serializes its calls.
type strArena struct {
	buf []byte // the current chunk; its spare capacity is free
}

// arenaChunk is the size of a chunk: the largest small-object size class,
// so a chunk fills its span exactly, and at most a few KiB are left unused
// at a chunk's end.
const arenaChunk = 32 << 10

// clone returns a copy of s in the arena. Strings over an eighth of a
// chunk are copied on their own.
func (a *strArena) clone(s string) string {
	if len(s) == 0 {
		return ""
	}
	if len(s) > arenaChunk/8 {
		return strings.Clone(s)
	}
	if len(s) > cap(a.buf)-len(a.buf) {
		a.buf = make([]byte, 0, arenaChunk)
	}
	n := len(a.buf)
	a.buf = append(a.buf, s...)
	return unsafe.String(&a.buf[n], len(s))
}

// next makes the next clone start a new chunk, so that the strings cloned
// from now on do not keep the current chunk alive.
func (a *strArena) next() { a.buf = nil }
