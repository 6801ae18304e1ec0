//go:build !linux

package buildidcache

import (
	"errors"
	"io/fs"
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
