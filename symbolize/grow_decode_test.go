//go:build linux && (amd64 || arm64 || riscv64 || ppc64 || ppc64le || loong64)

package symbolize

import (
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
