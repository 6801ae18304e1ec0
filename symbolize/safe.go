package symbolize

import (
	"fmt"
	"runtime/debug"

	"github.com/perfcheck/perfcheck/internal/safeelf"
)

// safely runs f, which calls into debug/elf, debug/dwarf or debug/gosym,
// through safeelf.Do, and makes the error of a recovered panic wrap
// ErrMalformed as well, so that it names the file and says what it means.
//
// Every loader runs inside safely, and the loaders read mapped sections
// (see region) from Warnings, DebugFile and Symbol as well as from Frames:
// f runs with debug.SetPanicOnFault (which is per goroutine), so that a
// file truncated under its mapping fails the load with ErrMalformed
// instead of killing the process with SIGBUS.
func safely(name string, f func() error) error {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	err := safeelf.Do(name, f)
	// Only a panic in f itself, not an error f returned from a nested
	// safely, which wraps ErrMalformed already.
	if pe, ok := err.(*safeelf.PanicError); ok {
		if ferr := faultErr(name, pe.Value); ferr != nil {
			return ferr
		}
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return err
}

// faultErr is the error for a recovered panic r when it is a memory fault
// on a mapped section of the file name (debug.SetPanicOnFault), else nil.
func faultErr(name string, r any) error {
	if _, ok := r.(interface{ Addr() uintptr }); !ok {
		return nil
	}
	return fmt.Errorf("%w: %s: memory fault reading the file (changed or truncated while open?): %v", ErrMalformed, name, r)
}
