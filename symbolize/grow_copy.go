//go:build linux && !(amd64 || arm64 || riscv64 || ppc64 || ppc64le || loong64)

package symbolize

import "syscall"

// On these architectures the mmap system call does not take its six
// arguments directly (386, arm and mips use mmap2, s390x a block of
// arguments), so growMapping goes through syscall.Mmap, and grows by
// mapping anew and copying: syscall.Mmap's bookkeeping would not follow a
// mapping moved by mremap.

var growNoRemap = true

func growMapping(old []byte, size, used int) ([]byte, error) {
	r, err := mapAnon(int64(size), false)
	if err != nil {
		return nil, err
	}
	if old != nil {
		copy(r.mem, old[:used])
		freeMapping(old)
	}
	return r.mem, nil
}

func freeMapping(mem []byte) { syscall.Munmap(mem) }
