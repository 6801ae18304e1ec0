package symbolize

import (
	"os"
	"syscall"
	"unsafe"
)

// mapFile maps size bytes of f from offset off read-only. The pages are
// the page cache's: they cost resident memory only once touched, are
// shared with every other reader of the file and are not scanned by the
// garbage collector, which sizes the heap from what it scans (a section
// held on the heap lets the heap grow by its size again before the next
// collection).
func mapFile(f *os.File, off, size int64) (*region, error) {
	page := int64(os.Getpagesize())
	start := off &^ (page - 1)
	n := off - start + size
	if size <= 0 || n != int64(int(n)) {
		return nil, errNoMap
	}
	mem, err := syscall.Mmap(int(f.Fd()), start, int(n), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	return &region{mem: mem, data: mem[off-start:]}, nil
}

// mapAnon maps size bytes of zeroed anonymous memory, outside the Go heap:
// decompressed sections go there so that they count once in the
// process's memory instead of twice (their own size and the garbage
// collector's headroom on it). Pages never written cost nothing, so a
// size taken from a header costs only what the data fills. populate
// (for a size that is known to be filled) asks the kernel to allocate every
// page at once (MAP_POPULATE): one page fault per 4 KiB page costs more
// than the decompression that fills it on a virtual machine.
func mapAnon(size int64, populate bool) (*region, error) {
	if size <= 0 || size != int64(int(size)) {
		return nil, errNoMap
	}
	flags := syscall.MAP_PRIVATE | syscall.MAP_ANON
	if populate {
		flags |= syscall.MAP_POPULATE
	}
	mem, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, flags)
	if err != nil {
		return nil, err
	}
	return &region{mem: mem, data: mem}, nil
}

// dropPages gives the whole pages of r.data[lo:hi] back to the kernel
// (madvise MADV_DONTNEED): the process stops paying for them. A mapping of
// the file reads them from the file again when next touched; anonymous
// memory reads back zeros, so the caller must not read a dropped range
// of it again before r.refill. It returns the bytes dropped.
func (r *region) dropPages(lo, hi int) int {
	if r.mem == nil || lo >= hi {
		return 0
	}
	page := os.Getpagesize()
	base := int(uintptr(unsafe.Pointer(&r.data[0])) - uintptr(unsafe.Pointer(&r.mem[0])))
	a := (base + lo + page - 1) &^ (page - 1)
	b := (base + hi) &^ (page - 1)
	if hi == len(r.data) {
		b = len(r.mem) // the tail of the last page is the mapping's own
	}
	if a >= b {
		return 0
	}
	if syscall.Madvise(r.mem[a:b], syscall.MADV_DONTNEED) != nil {
		return 0
	}
	return b - a
}

// release unmaps r and drops its slices, so that no Go pointer into the
// unmapped range outlives it (see Binary.Close).
func (r *region) release() {
	syscall.Munmap(r.mem)
	r.mem, r.data = nil, nil
}
