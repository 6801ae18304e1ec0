package symbolize

import (
	"os"
	"syscall"
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

// release unmaps r and drops its slices, so that no Go pointer into the
// unmapped range outlives it (see Binary.Close).
func (r *region) release() {
	syscall.Munmap(r.mem)
	r.mem, r.data = nil, nil
}

// openNonblock makes Open's open(2) return at once on a FIFO (which it
// then refuses) instead of waiting for a writer.
const openNonblock = syscall.O_NONBLOCK
