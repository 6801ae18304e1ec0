package buildidcache

import (
	"fmt"
	"io"
	"os"

	"github.com/perfcheck/perfcheck/buildid"
)

// MismatchError means the ELF file File, opened to be read, does not carry
// the build-id Want that it was expected to: it has Got (nil: none). A file
// found by build-id can be replaced at its path before it is opened again
// to be read; the readers that take a build-id to expect check it on the
// bytes they then read, and return this error otherwise.
type MismatchError struct {
	File      string
	Got, Want buildid.ID
}

func (e *MismatchError) Error() string {
	if len(e.Got) == 0 {
		return fmt.Sprintf("%s: no build-id, not %s", e.File, e.Want)
	}
	return fmt.Sprintf("%s: build-id %s, not %s", e.File, e.Got, e.Want)
}

// Unwrap returns ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// ImageBuildID returns the GNU build-id of the ELF image r (size bytes)
// read from name, nil when it has none. When want is not nil the image
// must carry it (or its zero-padded form, buildid.ID.Matches): else the
// error is a *MismatchError. Errors name the file.
func ImageBuildID(name string, r io.ReaderAt, size int64, want buildid.ID) (buildid.ID, error) {
	ident, err := ReadIdentity(r, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	id := ident.BuildID
	if len(id) == 0 {
		id = nil
	}
	if len(want) > 0 && (len(id) == 0 || !id.Matches(want)) {
		return nil, &MismatchError{File: name, Got: id, Want: want}
	}
	return id, nil
}

// OpenVerified opens the regular file name (OpenRegular) and, when want is
// not nil, checks that it carries build-id want (ImageBuildID) on the open
// file: the caller then reads the very file whose build-id was checked,
// not one put at the path since.
func OpenVerified(name string, want buildid.ID) (*os.File, error) {
	f, err := OpenRegular(name)
	if err != nil || len(want) == 0 {
		return f, err
	}
	st, err := f.Stat()
	if err == nil {
		_, err = ImageBuildID(name, f, st.Size(), want)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
