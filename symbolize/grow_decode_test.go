//go:build linux && (amd64 || arm64 || riscv64 || ppc64 || ppc64le || loong64)

package symbolize

import (
	"fmt"
	"reflect"
	"syscall"
	"testing"
	"unsafe"
)

// TestDecodeDropsBuildMappings decodes the units of a Go program (its
// large ones build their tables in mappings) and checks that the build
// mappings were given up and that nothing reachable from the Binary, while
// open and after Close, points into them: the runtime may map its heap
// there later (see TestCloseDropsPointersIntoMappings).
func TestDecodeDropsBuildMappings(t *testing.T) {
	p := buildGoProg(t)
	// Each range given up is reserved at once (quarantine), so that no
	// later mapping takes it and a pointer into it can only be stale.
	var released [][2]uintptr
	testHookGrowRelease = func(mem []byte) {
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
		if quarantine(lo, uintptr(len(mem))) {
			released = append(released, [2]uintptr{lo, lo + uintptr(len(mem))})
		}
	}
	defer func() {
		testHookGrowRelease = nil
		for _, r := range released {
			syscall.Syscall(syscall.SYS_MUNMAP, r[0], r[1]-r[0], 0)
		}
	}()
	b, err := Open(p, Options{NoDebugFile: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range textAddrs(t, p, 2000) {
		b.Frames(a, nil)
	}
	if len(released) == 0 {
		t.Fatal("no unit built its tables in a mapping: the test would check nothing")
	}
	check := func(when string) {
		w := &pointerWalk{ranges: released, seen: map[walkKey]bool{}}
		w.walk(reflect.ValueOf(b), "b")
		for _, f := range w.found {
			t.Errorf("%s, %s points into a released build mapping", when, f)
		}
	}
	check("open")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	check("after Close")
	t.Logf("%d build mappings given up", len(released))
}

// quarantine maps n inaccessible bytes at lo, unless something else was
// mapped there since (then it reports false).
func quarantine(lo, n uintptr) bool {
	const mapFixedNoreplace = 0x100000
	p, _, e := syscall.Syscall6(syscall.SYS_MMAP, lo, n, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapFixedNoreplace, ^uintptr(0), 0)
	if e != 0 {
		return false
	}
	if p != lo { // a kernel before 4.17 takes the address as a hint
		syscall.Syscall(syscall.SYS_MUNMAP, p, n, 0)
		return false
	}
	return true
}

// TestDecodeGivesBackBeforeCopy checks the order of a decode's end, which
// sets the batch's peak memory: the unit's section bytes are given back
// before its tables are copied out of their build buffers, and each build
// buffer is freed by the copy (moveOffHeap), not after all are copied.
// Every build mapping freed during a decode must find no span of
// .debug_info filled (the decoding unit's included), and moveOffHeap
// must return with the build holding nothing. Earlier, the unit's line
// program goes once read: no line program may be filled as a DIE walk
// starts.
func TestDecodeGivesBackBeforeCopy(t *testing.T) {
	p := buildGoProg(t)
	b, x := openDropping(t, p, Options{NoDebugFile: true})
	defer b.Close()
	if !x.drop.partial {
		t.Fatal("the sections do not refill by range: the test needs them to")
	}
	releases, present := 0, 0
	walks, linesPresent := 0, 0
	testHookDIEWalk = func() {
		walks++
		for _, s := range x.drop.lineSpans {
			if !s.gone {
				linesPresent++
			}
		}
	}
	defer func() { testHookDIEWalk = nil }()
	testHookGrowFree = func(mem []byte) {
		releases++
		if sd := x.drop; sd != nil { // x.mu is held: this is a decode
			for i, s := range sd.infoSpans {
				if !s.gone && sd.spanOf[i] >= 0 {
					present++
				}
			}
		}
	}
	defer func() { testHookGrowFree = nil }()
	for _, a := range textAddrs(t, p, 300) {
		b.Frames(a, nil)
	}
	testHookGrowFree = nil
	if releases == 0 {
		t.Fatal("no unit built its tables in a mapping: the test would check nothing")
	}
	if present > 0 {
		t.Errorf("%d unit spans of .debug_info still filled when build mappings were given up (%d releases): the unit's section bytes must go before its tables are copied", present, releases)
	}
	if walks == 0 {
		t.Fatal("no DIE walk seen")
	}
	if linesPresent > 0 {
		t.Errorf("%d line programs still filled as DIE walks started (%d walks): a unit's line program must go once read", linesPresent, walks)
	}
}

// TestMoveOffHeapFreesBuild builds tables in growBufs large enough to be
// mappings and checks that moveOffHeap copies them exactly and frees every
// build buffer itself, each once copied.
func TestMoveOffHeapFreesBuild(t *testing.T) {
	var bld unitBuild
	defer bld.free()
	for i := range 40000 {
		if err := bld.lines.add(lineRow{addr: uint64(i * 4), line: uint32(i % 1000), file: uint32(i % 7)}); err != nil {
			t.Fatal(err)
		}
		bld.scopes.add(scope{lo: uint32(i), hi: uint32(i + 1), firstChild: -1, nextSibling: -1})
		bld.roots.add(rootRange{uint32(i), uint32(i + 1), int32(i)})
	}
	for _, g := range []bool{bld.lines.data.offHeap(), bld.scopes.offHeap(), bld.roots.offHeap()} {
		if !g {
			t.Fatal("a build buffer stayed on the heap: the test would not exercise freeing mappings")
		}
	}
	var ui unitInfo
	ui.lines = bld.lines.table()
	ui.scopes, ui.roots = bld.scopes.s, bld.roots.s
	want := [3]string{string(ui.lines.data), fmt.Sprint(ui.scopes), fmt.Sprint(ui.roots)}
	// A buffer must be freed only once its table is copied: by then
	// nothing of ui may point into it.
	testHookGrowFree = func(mem []byte) {
		lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(mem))), uintptr(unsafe.Pointer(unsafe.SliceData(mem)))+uintptr(len(mem))
		for _, p := range []unsafe.Pointer{unsafe.Pointer(unsafe.SliceData(ui.lines.data)), unsafe.Pointer(unsafe.SliceData(ui.scopes)), unsafe.Pointer(unsafe.SliceData(ui.roots))} {
			if a := uintptr(p); a >= lo && a < hi {
				t.Errorf("build mapping [%#x, %#x) freed while a table still points into it", lo, hi)
			}
		}
	}
	defer func() { testHookGrowFree = nil }()
	if !ui.moveOffHeap(&bld) {
		t.Fatal("tables not moved off the heap")
	}
	testHookGrowFree = nil
	if bld.lines.data.offHeap() || bld.scopes.offHeap() || bld.roots.offHeap() || bld.scopes.s != nil {
		t.Error("moveOffHeap returned with build buffers still held: they and the tables' copies are resident at once")
	}
	if got := [3]string{string(ui.lines.data), fmt.Sprint(ui.scopes), fmt.Sprint(ui.roots)}; got != want {
		t.Error("tables differ once moved off the heap")
	}
}
