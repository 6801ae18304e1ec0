//go:build linux

package symbolize

import (
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// TestOffHeapTables symbolizes a Go program whose large units (the
// runtime's) have their tables moved off the heap, checks every answer
// against the same binary with its tables kept on the heap, and that the
// mappings are released once the binary is closed and collected.
func TestOffHeapTables(t *testing.T) {
	p := buildGoProg(t)
	addrs := textAddrs(t, p, 2000)
	moved0, released0 := offHeapMoved.Load(), offHeapReleased.Load()
	func() {
		b, err := Open(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		ref, err := Open(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		if rx := ref.loadDWARF(); rx == nil {
			t.Fatal("no DWARF")
		} else {
			rx.onHeap = true
		}
		for _, a := range addrs {
			got, err1 := b.Frames(a, nil)
			want, err2 := ref.Frames(a, nil)
			if fmtOurs(got) != fmtOurs(want) || (err1 == nil) != (err2 == nil) {
				t.Fatalf("%#x: off the heap %s (%v), on the heap %s (%v)", a, fmtOurs(got), err1, fmtOurs(want), err2)
			}
		}
		if offHeapMoved.Load() == moved0 {
			t.Fatal("no unit moved off the heap: the test would not exercise it")
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for offHeapReleased.Load() == released0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if offHeapReleased.Load() == released0 {
		t.Fatal("no off-heap table released after the binaries were closed and collected")
	}
	t.Logf("%d units moved off the heap, %d released", offHeapMoved.Load()-moved0, offHeapReleased.Load()-released0)
}

// TestPackOnHeap checks that a unit whose tables stay on the heap has
// them in one object of their size, laid out without overlap: every
// table of every unit of the test's Go program decoded with onHeap lies
// inside one block of tablesSize bytes, the tables ordered as packTables
// places them. (TestOffHeapTables checks the answers from such tables.)
func TestPackOnHeap(t *testing.T) {
	p := buildGoProg(t)
	b := mustOpen(t, p)
	x := b.loadDWARF()
	if x == nil {
		t.Fatal("no DWARF")
	}
	x.onHeap = true
	for _, a := range textAddrs(t, p, 2000) {
		b.Frames(a, nil)
	}
	checked := 0
	for u := range x.units {
		ui := x.units[u].info.Load()
		if ui == nil {
			continue
		}
		type tab struct {
			name     string
			at, size uintptr
		}
		var tabs []tab
		add := func(name string, p unsafe.Pointer, n, elem uintptr) {
			if n > 0 {
				tabs = append(tabs, tab{name, uintptr(p), n * elem})
			}
		}
		add("blockAddr", unsafe.Pointer(unsafe.SliceData(ui.lines.blockAddr)), uintptr(len(ui.lines.blockAddr)), 8)
		add("blockOff", unsafe.Pointer(unsafe.SliceData(ui.lines.blockOff)), uintptr(len(ui.lines.blockOff)), 4)
		add("data", unsafe.Pointer(unsafe.SliceData(ui.lines.data)), uintptr(len(ui.lines.data)), 1)
		add("extra", unsafe.Pointer(unsafe.SliceData(ui.extra)), uintptr(len(ui.extra)), unsafe.Sizeof(span32{}))
		add("kids", unsafe.Pointer(unsafe.SliceData(ui.kids)), uintptr(len(ui.kids)), unsafe.Sizeof(rootRange{}))
		add("kidsHi", unsafe.Pointer(unsafe.SliceData(ui.kidsHi)), uintptr(len(ui.kidsHi)), 4)
		add("kidRuns", unsafe.Pointer(unsafe.SliceData(ui.kidRuns)), uintptr(len(ui.kidRuns)), unsafe.Sizeof(kidRun{}))
		add("scopes", unsafe.Pointer(unsafe.SliceData(ui.scopes)), uintptr(len(ui.scopes)), unsafe.Sizeof(scope{}))
		add("roots", unsafe.Pointer(unsafe.SliceData(ui.roots)), uintptr(len(ui.roots)), unsafe.Sizeof(rootRange{}))
		add("rootHi", unsafe.Pointer(unsafe.SliceData(ui.rootHi)), uintptr(len(ui.rootHi)), 4)
		add("wide", unsafe.Pointer(unsafe.SliceData(ui.wide)), uintptr(len(ui.wide)), unsafe.Sizeof(wideCall{}))
		if len(tabs) < 2 {
			continue
		}
		lo, size := tabs[0].at, ui.tablesSize()
		for i, tb := range tabs {
			if tb.at < lo || tb.at+tb.size > lo+size {
				t.Fatalf("unit %d: %s at +%d (%d bytes), outside the %d-byte block of the first table", u, tb.name, int64(tb.at-lo), tb.size, size)
			}
			if i > 0 && tb.at < tabs[i-1].at+tabs[i-1].size {
				t.Fatalf("unit %d: %s overlaps %s", u, tb.name, tabs[i-1].name)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no unit with two tables or more")
	}
	t.Logf("%d units' tables in one block each", checked)
}
