//go:build !linux

package symbolize

// Elsewhere nothing is mapped (see mmap_other.go): growBufs stay on the
// heap.

var growNoRemap = true

func growMapping(old []byte, size, used int) ([]byte, error) { return nil, errNoMap }

func freeMapping(mem []byte) {}
