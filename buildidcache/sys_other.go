//go:build !linux

package buildidcache

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// Linux is the target; elsewhere the package only builds, and stat gives
// nothing beyond fs.FileInfo here.
func sysStat(fs.FileInfo) (fileSys, bool) { return fileSys{}, false }

// FileIDOf returns the device and inode of fi in the form a recording's
// MMAP2 records give them; ok is always false on systems other than Linux.
func FileIDOf(fs.FileInfo) (FileID, bool) { return FileID{}, false }

// linkInto fails here, so the cache copies instead of linking, as it
// does on Linux when linking is refused.
func linkInto(string, uintptr, string) error { return errors.ErrUnsupported }

// kernelRelease reports that there is no Linux kernel release to look up.
func kernelRelease() (string, bool) { return "", false }

// copySparse copies the first n bytes of src into dst; holes are not
// looked for here.
func copySparse(dst, src *os.File, n int64) error {
	_, err := io.Copy(dst, io.NewSectionReader(src, 0, n))
	return err
}
