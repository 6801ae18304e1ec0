//go:build !linux

package symbolize

import "os"

// perfcheck targets Linux; elsewhere it only needs to build, so nothing is
// mapped and every section lives on the Go heap (the callers fall back to
// reading or decompressing into a slice).

func mapFile(f *os.File, off, size int64) (*region, error) { return nil, errNoMap }

func mapAnon(size int64, populate bool) (*region, error) { return nil, errNoMap }

func (r *region) release() {}

func (r *region) dropPages(lo, hi int) int { return 0 }
