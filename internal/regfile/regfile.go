// Package regfile opens files named by untrusted input (paths recorded in
// perf.data, debug directories, debuginfod caches) only when they are
// regular files.
//
// # Security
//
// The open is non-blocking, so a FIFO at such a path cannot hang the caller
// (O_NONBLOCK has no effect on regular files), and the type is checked on
// the open descriptor, so a swap after a stat cannot slip a FIFO or a
// device in.
package regfile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by Open's error for anything but a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading when it is a regular file.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w (%v)", path, ErrNotRegular, st.Mode().Type())
	}
	return f, nil
}
