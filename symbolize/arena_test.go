package symbolize

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestStrArena checks that clones are equal copies, that small ones share
// a chunk (the point: one heap object for many names), that a large one
// gets its own, that a clone outlives both the arena and the source it
// was copied from, and that after allocExact each clone is its own
// object.
func TestStrArena(t *testing.T) {
	var a strArena
	src := []byte("runtime.mallocgc")
	s1 := a.clone(string(src[:7]))
	s2 := a.clone(unsafe.String(&src[0], len(src)))
	src[0] = 'X' // the clone is a copy, not a view
	if s1 != "runtime" || s2 != "runtime.mallocgc" {
		t.Fatalf("clones %q, %q", s1, s2)
	}
	chunk := func(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }
	if d := chunk(s2) - chunk(s1); d != uintptr(len(s1)) {
		t.Fatalf("second clone %d bytes after the first, want %d (same chunk)", d, len(s1))
	}
	if a.clone("") != "" {
		t.Fatal("empty clone")
	}
	big := strings.Repeat("x", slabChunk/8+1)
	before := len(a.buf)
	if b := a.clone(big); b != big || len(a.buf) != before {
		t.Fatalf("large clone: equal %v, arena grew by %d bytes", b == big, len(a.buf)-before)
	}
	// Filling a chunk moves to a new one; every clone stays intact.
	var all []string
	for i := 0; len(all) < 2*slabChunk/32; i++ {
		all = append(all, a.clone(strings.Repeat(string(rune('a'+i%26)), 32)))
	}
	a = strArena{}
	runtime.GC()
	for i, s := range all {
		if s != strings.Repeat(string(rune('a'+i%26)), 32) {
			t.Fatalf("clone %d is %q after the arena was dropped", i, s)
		}
	}
	if s1 != "runtime" {
		t.Fatalf("clone %q after the arena was dropped", s1)
	}
	// Exact from now on: each clone its own object, none in a chunk.
	var e strArena
	e.clone("warm") // a chunk exists
	e.allocExact()
	x1, x2 := e.clone("main.main"), e.clone("main.init")
	if x1 != "main.main" || x2 != "main.init" || e.buf != nil {
		t.Fatalf("exact clones %q, %q; slab still has a chunk: %v", x1, x2, e.buf != nil)
	}
	if chunk(x2) == chunk(x1)+uintptr(len(x1)) {
		t.Fatal("exact clones laid out one after the other, as in a chunk")
	}
}

// TestSlabAlloc checks that slices from a slab are zeroed, capped at
// their length (an append must not write over the next slice), carved
// from one chunk while they fit, and that a large one is its own object.
func TestSlabAlloc(t *testing.T) {
	var s slab[uint64]
	a := s.alloc(3)
	b := s.copyOf([]uint64{7, 8})
	if len(a) != 3 || cap(a) != 3 || a[0]|a[1]|a[2] != 0 {
		t.Fatalf("alloc(3) = %v, cap %d", a, cap(a))
	}
	if uintptr(unsafe.Pointer(&b[0]))-uintptr(unsafe.Pointer(&a[0])) != 3*8 {
		t.Fatal("second slice not right after the first in the chunk")
	}
	a = append(a, 99)
	if b[0] != 7 || b[1] != 8 {
		t.Fatalf("append to the first slice wrote over the second: %v", b)
	}
	if s.alloc(0) != nil {
		t.Fatal("alloc(0) not nil")
	}
	n := slabChunk/8/8 + 1
	before := len(s.buf)
	if big := s.alloc(n); len(big) != n || len(s.buf) != before {
		t.Fatalf("alloc(%d): len %d, slab grew by %d", n, len(big), len(s.buf)-before)
	}
}
