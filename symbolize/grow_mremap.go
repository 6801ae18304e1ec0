//go:build linux && (amd64 || arm64 || riscv64 || ppc64 || ppc64le || loong64)

package symbolize

import (
	"os"
	"syscall"
	"unsafe"
)

// growNoRemap makes growMapping map anew and copy instead of moving the
// pages with mremap (tests: the path of the architectures below).
var growNoRemap bool

// growMapping returns an anonymous mapping of at least size bytes holding
// the first used bytes of old (nil: none), which it takes over: old is
// unmapped or moved and must not be used again. The mapping is made with
// raw system calls rather than syscall.Mmap, whose bookkeeping would not
// follow a mapping that mremap moved (and would keep a slice of the old,
// unmapped range). Pages are not populated: the builder fills them as it
// goes.
func growMapping(old []byte, size, used int) ([]byte, error) {
	page := os.Getpagesize()
	size = (size + page - 1) &^ (page - 1)
	if size <= 0 {
		return nil, errNoMap
	}
	if old != nil && !growNoRemap {
		const mremapMaymove = 1
		p, _, e := syscall.Syscall6(syscall.SYS_MREMAP, uintptr(unsafe.Pointer(unsafe.SliceData(old))), uintptr(len(old)), uintptr(size), mremapMaymove, 0, 0)
		if e != 0 {
			return nil, e
		}
		return mappedBytes(p, size), nil
	}
	p, _, e := syscall.Syscall6(syscall.SYS_MMAP, 0, uintptr(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON, ^uintptr(0), 0)
	if e != 0 {
		return nil, e
	}
	mem := mappedBytes(p, size)
	if old != nil {
		copy(mem, old[:used])
		freeMapping(old)
	}
	return mem, nil
}

// freeMapping unmaps a mapping growMapping returned.
func freeMapping(mem []byte) {
	syscall.Syscall(syscall.SYS_MUNMAP, uintptr(unsafe.Pointer(unsafe.SliceData(mem))), uintptr(len(mem)), 0)
}

// mappedBytes is the n bytes mapped at p.
func mappedBytes(p uintptr, n int) []byte {
	return unsafe.Slice(*(**byte)(unsafe.Pointer(&p)), n)
}
