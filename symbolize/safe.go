package symbolize

import (
	"fmt"
	"runtime"
)

// safely runs f, which calls into debug/elf, debug/dwarf or debug/gosym, and
// turns a panic inside it into an error wrapping ErrMalformed. Those
// packages document that malformed input may make them panic; our own code
// never relies on recover. A runtime.Error that is not from decoding (nil
// dereference in our code) is still reported, not hidden: the message keeps
// the panic value.
func safely(name string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(runtime.Error); ok {
				err = fmt.Errorf("%w: %s: decoder panic: %v", ErrMalformed, name, r)
				return
			}
			err = fmt.Errorf("%w: %s: decoder panic: %v", ErrMalformed, name, r)
		}
	}()
	return f()
}
