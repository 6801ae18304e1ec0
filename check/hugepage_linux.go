package check

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of an x86-64 (and arm64 4K-granule) transparent
// huge page.
const hugePage = 2 << 20

// madvHugepage is MADV_HUGEPAGE (include/uapi/asm-generic/mman-common.h).
const madvHugepage = 14

// Where transparent huge pages are "madvise" only, as on Debian's default
// kernels, the Go runtime does not advise its heap, and every 4 KB page of
// a large new slice costs a page fault when it is first written, far more
// than as 2 MB pages (bench/README.md). The check's largest blocks (its
// stacks, and the Result's location pointers) are therefore advised as
// huge pages before their first use. The memory stays the Go heap's,
// allocated by make: the advice changes how the kernel faults it in, not
// who owns it, and it is only advice (refused when transparent huge pages
// are off, unheeded when the kernel has no huge page to give).

// adviseHuge advises the whole 2 MB pages inside the n bytes at p as
// transparent huge pages (madvise MADV_HUGEPAGE); the partial pages at
// either end are left as they are.
func adviseHuge(p unsafe.Pointer, n uintptr) {
	start := uintptr(p)
	lo := (start + hugePage - 1) &^ (hugePage - 1)
	hi := (start + n) &^ (hugePage - 1)
	if hi <= lo {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, lo-start)), hi-lo)
	_ = syscall.Madvise(b, madvHugepage) // advice: an error changes nothing
}

// hugeInt32s returns an empty slice with capacity n whose memory starts on
// a 2 MB boundary, so that all of it but a partial last page is advised as
// huge pages. The up to 2 MB before the boundary are never written (int32s
// hold no pointers, so the garbage collector does not read them either):
// they cost address space, not memory.
func hugeInt32s(n int) []int32 {
	const per = hugePage / 4
	buf := make([]int32, n+per)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	skip := int(((start+hugePage-1)&^(hugePage-1) - start) / 4)
	v := buf[skip : skip+n : skip+n]
	adviseHuge(unsafe.Pointer(unsafe.SliceData(v)), uintptr(n)*4)
	return v[:0]
}
