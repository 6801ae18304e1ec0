package symbolize

import (
	"errors"
	"fmt"

	"github.com/perfcheck/perfcheck/internal/safeelf"
)

// safely runs f, which calls into debug/elf, debug/dwarf or debug/gosym,
// through safeelf.Do: a panic inside it becomes an error wrapping
// ErrMalformed and the *safeelf.PanicError. The caller names the file in
// the errors it returns, f's and the panic's alike, so the PanicError
// carries no file name to repeat.
func safely(f func() error) error {
	err := safeelf.Do("", f)
	// Only a panic in f itself, not an error f returned from a nested
	// safely, which wraps ErrMalformed already.
	if pe, ok := err.(*safeelf.PanicError); ok {
		return fmt.Errorf("%w: %w", ErrMalformed, pe)
	}
	return err
}

// malformed returns err wrapping ErrMalformed: itself when it does (or
// wraps ErrTooLarge: input too large, not malformed), else "malformed
// input: " and err (a debug/elf, debug/dwarf or debug/gosym error: input
// they could not decode).
func malformed(err error) error {
	if err == nil || errors.Is(err, ErrMalformed) || errors.Is(err, ErrTooLarge) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}
