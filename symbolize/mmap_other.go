//go:build !unix

package symbolize

import "os"

// Without mmap every section lives on the Go heap (the callers fall back
// to reading or decompressing into a slice).

func mapFile(f *os.File, off, size int64) (*region, error) { return nil, errNoMap }

func mapAnon(size int64, populate bool) (*region, error) { return nil, errNoMap }

func (r *region) release() {}

// openNonblock: no FIFO blocks an open here.
const openNonblock = 0
