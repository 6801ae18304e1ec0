package symbolize

import (
	"errors"
	"fmt"
)

// safely runs f, which calls into debug/elf, debug/dwarf or debug/gosym, and
// turns a panic inside it into an error wrapping ErrMalformed. Those
// packages document that malformed input may make them panic (an index out
// of range on a corrupt offset); our own decoders check every length
// instead and never rely on recover. The panic value is kept in the message
// so that a bug of ours caught here stays visible. The caller names the
// file in the errors it returns, f's and the panic's alike.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: decoder panic: %v", ErrMalformed, r)
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
