package symbolize

import (
	"errors"
	"fmt"

	"github.com/perfcheck/perfcheck/internal/safeelf"
)

// safely runs f, which calls into debug/elf, debug/dwarf or debug/gosym on
// the file name, through safeelf.Do: a panic inside it becomes a
// decoderPanic, which wraps ErrMalformed and the *safeelf.PanicError. The
// caller names the file in the errors it returns, f's and the panic's
// alike: the panic's message does not repeat it.
func safely(name string, f func() error) error {
	err := safeelf.Do(name, f)
	// Only a panic in f itself, not an error f returned from a nested
	// safely, which is a decoderPanic already.
	if pe, ok := err.(*safeelf.PanicError); ok {
		return decoderPanic{pe}
	}
	return err
}

// decoderPanic is a panic recovered by safely.
type decoderPanic struct{ pe *safeelf.PanicError }

func (e decoderPanic) Error() string {
	return fmt.Sprintf("%v: decoder panic: %v", ErrMalformed, e.pe.Value)
}

func (e decoderPanic) Unwrap() []error { return []error{ErrMalformed, e.pe} }

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
