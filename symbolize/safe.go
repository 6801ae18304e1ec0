package symbolize

import (
	"fmt"
	"runtime/debug"
)

// safely runs f, which calls into debug/elf, debug/dwarf or debug/gosym, and
// turns a panic inside it into an error wrapping ErrMalformed that names
// the file. Those packages document that malformed input may make them
// panic (an index out of range on a corrupt offset); our own decoders check
// every length instead and never rely on recover. The panic value is kept
// in the message so that a bug of ours caught here stays visible.
//
// Every loader runs inside safely, and the loaders read mapped sections
// (see region) from Warnings, DebugFile and Symbol as well as from Frames:
// f runs with debug.SetPanicOnFault (which is per goroutine), so that a
// file truncated under its mapping fails the load with ErrMalformed
// instead of killing the process with SIGBUS.
func safely(name string, f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if err = faultErr(name, r); err != nil {
				return
			}
			err = fmt.Errorf("%w: %s: decoder panic: %v", ErrMalformed, name, r)
		}
	}()
	return f()
}

// faultErr is the error for a recovered panic r when it is a memory fault
// on a mapped section of the file name (debug.SetPanicOnFault), else nil.
func faultErr(name string, r any) error {
	if _, ok := r.(interface{ Addr() uintptr }); !ok {
		return nil
	}
	return fmt.Errorf("%w: %s: memory fault reading the file (changed or truncated while open?): %v", ErrMalformed, name, r)
}
