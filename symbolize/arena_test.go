package symbolize

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestStrArena checks that clones are equal copies, that small ones share
// a chunk (the point: one heap object for many names), that a large one
// gets its own, that next starts a new chunk, and that a clone outlives
// both the arena and the source it was copied from.
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
	big := strings.Repeat("x", arenaChunk/8+1)
	before := len(a.buf)
	if b := a.clone(big); b != big || len(a.buf) != before {
		t.Fatalf("large clone: equal %v, arena grew by %d bytes", b == big, len(a.buf)-before)
	}
	a.next()
	s3 := a.clone("main.main")
	if c := chunk(s3); c >= chunk(s1) && c < chunk(s1)+arenaChunk {
		t.Fatal("clone after next is in the previous chunk")
	}
	// Filling a chunk moves to a new one; every clone stays intact.
	var all []string
	for i := 0; len(all) < 2*arenaChunk/32; i++ {
		all = append(all, a.clone(strings.Repeat(string(rune('a'+i%26)), 32)))
	}
	a = strArena{}
	runtime.GC()
	for i, s := range all {
		if s != strings.Repeat(string(rune('a'+i%26)), 32) {
			t.Fatalf("clone %d is %q after the arena was dropped", i, s)
		}
	}
	if s1 != "runtime" || s3 != "main.main" {
		t.Fatalf("clones %q, %q after the arena was dropped", s1, s3)
	}
}
