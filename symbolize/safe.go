package symbolize

import (
	"errors"
	"fmt"
)

// safely runs f, which calls into debug/elf, debug/dwarf or debug/gosym, and
// turns a panic inside it into an error wrapping ErrMalformed that names
// the file. Those packages document that malformed input may make them
// panic (an index out of range on a corrupt offset); our own decoders check
// every length instead and never rely on recover. The panic value is kept
// in the message so that a bug of ours caught here stays visible.
func safely(name string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: decoder panic: %v", name, ErrMalformed, r)
		}
	}()
	return f()
}

// malformed returns err wrapping ErrMalformed: itself when it does, else
// "malformed input: " and err (a debug/elf, debug/dwarf or debug/gosym
// error: input they could not decode).
func malformed(err error) error {
	if err == nil || errors.Is(err, ErrMalformed) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}
