package unwind

import (
	"debug/elf"
	"fmt"
	"io"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/safeelf"
)

// ReadTable reads the unwind tables of the ELF file at path. Only a
// regular file is opened, without blocking (buildidcache.OpenRegular): a
// recording names any path, and a FIFO there must not hang the caller.
//
// When want is not nil the file must carry that build-id: it is checked
// on the open file whose tables are then read, since the file at a path a
// lookup verified can be replaced before it is opened again; another one
// is an error wrapping a *buildidcache.MismatchError. A panic of
// debug/elf on a malformed file becomes an error naming it
// (internal/safeelf).
func ReadTable(path string, want buildid.ID) (t *Table, err error) {
	f, err := buildidcache.OpenVerified(path, want)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer safeelf.Recover(path, &err) // t is nil after a panic: only the last return sets it
	ef, err := elf.NewFile(io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t, err = newTable(ef)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
