//go:build linux

package symbolize

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestGrowBuf grows a buffer from the heap into a mapping and through
// many doublings of it, by add and by addSlice, moving the pages with
// mremap and (growNoRemap) by mapping anew and copying, and checks at
// every step that the elements are the ones added, that the buffer left
// the heap, and that every mapping it gave up (moved from or freed) is
// no longer mapped.
func TestGrowBuf(t *testing.T) {
	for _, noRemap := range []bool{false, true} {
		t.Run(fmt.Sprintf("noRemap=%v", noRemap), func(t *testing.T) {
			defer func(v bool) { growNoRemap = v }(growNoRemap)
			growNoRemap = noRemap
			var released [][]byte
			testHookGrowRelease = func(mem []byte) { released = append(released, mem) }
			defer func() { testHookGrowRelease = nil }()

			var g growBuf[uint64]
			const n = 200_000 // 1.6 MB: from the heap past growMapMin, then doubling
			check := func(k int) {
				t.Helper()
				if len(g.s) != k {
					t.Fatalf("%d added, len %d", k, len(g.s))
				}
				for i, v := range g.s {
					if v != uint64(i)*3+1 {
						t.Fatalf("%d added: s[%d] = %d, want %d", k, i, v, uint64(i)*3+1)
					}
				}
			}
			var chunk []uint64
			for i := 0; i < n; {
				if i%7 == 0 && i+100 <= n {
					chunk = chunk[:0]
					for j := range 100 {
						chunk = append(chunk, uint64(i+j)*3+1)
					}
					g.addSlice(chunk)
					i += 100
				} else {
					g.add(uint64(i)*3 + 1)
					i++
				}
				if i&(i-1) == 0 || i%65_536 == 0 {
					check(i)
				}
			}
			check(n)
			if !g.offHeap() {
				t.Fatal("a 1.6 MB buffer is still on the heap")
			}
			if int(unsafe.Sizeof(uint64(0)))*cap(g.s) > len(g.mem) {
				t.Fatalf("capacity %d elements beyond the %d-byte mapping", cap(g.s), len(g.mem))
			}
			last := g.mem
			g.free()
			if g.s != nil || g.mem != nil {
				t.Fatal("free left slices into the unmapped range")
			}
			if len(released) == 0 || unsafe.SliceData(released[len(released)-1]) != unsafe.SliceData(last) {
				t.Fatal("free did not report the buffer's mapping as released")
			}
			if noRemap && len(released) < 3 {
				t.Fatalf("%d mappings given up: growth did not map anew", len(released))
			}
			maps := selfMappings(t)
			for _, m := range released {
				lo := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
				if r, ok := mappedAt(maps, lo); ok {
					t.Errorf("%#x, given up by the buffer, is still mapped (%#x-%#x)", lo, r[0], r[1])
				}
			}
		})
	}
}

// selfMappings returns the address ranges of /proc/self/maps.
func selfMappings(t *testing.T) [][2]uintptr {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var rs [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lo, hi, ok := strings.Cut(strings.Fields(sc.Text())[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			rs = append(rs, [2]uintptr{uintptr(a), uintptr(b)})
		}
	}
	return rs
}

func mappedAt(maps [][2]uintptr, p uintptr) ([2]uintptr, bool) {
	for _, r := range maps {
		if r[0] <= p && p < r[1] {
			return r, true
		}
	}
	return [2]uintptr{}, false
}
