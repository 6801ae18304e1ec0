//go:build linux

package symbolize

import (
	"runtime"
	"testing"
	"time"
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
