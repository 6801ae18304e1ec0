// Package safeelf is the one place perfcheck recovers from a panic:
// debug/elf, debug/dwarf and debug/gosym document that malformed input may
// make them panic (an index out of range on a corrupt offset), so every call
// into them on a file we did not write goes through Do or Recover,
// which turn such a panic into a *PanicError naming the file. perfcheck's
// own decoders check every length instead and never rely on recover.
package safeelf

import (
	"fmt"
)

// PanicError is a panic recovered while reading File. Value, what was
// passed to panic, stays in the message, so that a bug of ours caught here
// stays visible. File is "" when the caller's own error names the file.
type PanicError struct {
	File  string
	Value any
}

func (e *PanicError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("decoder panic: %v", e.Value)
	}
	return fmt.Sprintf("%s: decoder panic: %v", e.File, e.Value)
}

// Unwrap returns Value when it is an error (a runtime.Error, usually).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Recover, deferred by a function that reads file, turns a panic in that
// function into a *PanicError stored in *err:
//
//	func read(path string) (err error) {
//		defer safeelf.Recover(path, &err)
//		...
//	}
func Recover(file string, err *error) {
	if r := recover(); r != nil {
		*err = &PanicError{File: file, Value: r}
	}
}

// Do runs f, which reads file through debug/elf, debug/dwarf or
// debug/gosym, and returns its error, or a *PanicError if it panicked.
func Do(file string, f func() error) (err error) {
	defer Recover(file, &err)
	return f()
}
