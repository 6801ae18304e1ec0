package check

import (
	"testing"
	"unsafe"
)

// hugeInt32s gives exactly the capacity asked for, on a 2 MB boundary,
// and memory that holds what is stored in it.
func TestHugeInt32s(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, hugePage / 4, hugePage/4 + 1, 3*hugePage/4 + 17} {
		v := hugeInt32s(n)
		if len(v) != 0 || cap(v) != n {
			t.Fatalf("n=%d: len %d cap %d", n, len(v), cap(v))
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(v))); p%hugePage != 0 {
			t.Errorf("n=%d: starts at %#x, not on a 2 MB boundary", n, p)
		}
		for i := range n {
			v = append(v, int32(i*7))
		}
		for i, x := range v {
			if x != int32(i*7) {
				t.Fatalf("n=%d: [%d] = %d, want %d", n, i, x, i*7)
			}
		}
	}
}
