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

// hugeInt32s returns an empty slice with capacity n whose memory starts on
// a 2 MB boundary and is advised as transparent huge pages (madvise
// MADV_HUGEPAGE) before its first use. Where transparent huge pages are
// "madvise" only, as on Debian's default kernels, the Go runtime does not
// advise its heap, and every 4 KB page of a large new slice costs a page
// fault when first written: on the VM the bench figures come from,
// touching 48 MB costs 200–225 ms of CPU in faults, and 15–17 ms as huge
// pages.
//
// The memory stays the Go heap's, allocated by make: the advice changes
// how the kernel faults it in, not who owns it, and it is only advice
// (refused when transparent huge pages are off, unheeded when the kernel
// has no huge page to give). The up to 2 MB before the boundary are never
// written (int32s hold no pointers, so the garbage collector does not read
// them either): they cost address space, not memory.
func hugeInt32s(n int) []int32 {
	const per = hugePage / 4
	buf := make([]int32, n+per)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	skip := int(((start+hugePage-1)&^(hugePage-1) - start) / 4)
	v := buf[skip : skip+n : skip+n]
	if end := (uintptr(n) * 4) &^ (hugePage - 1); end > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), end)
		_ = syscall.Madvise(b, madvHugepage) // advice: an error changes nothing
	}
	return v[:0]
}
