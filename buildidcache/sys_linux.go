package buildidcache

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sysStat returns fi's fileSys; ok is false when fi does not come from
// stat(2).
func sysStat(fi fs.FileInfo) (s fileSys, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileSys{}, false
	}
	return fileSys{
		dev:    uint64(st.Dev),
		ino:    uint64(st.Ino),
		nlink:  uint64(st.Nlink),
		uid:    int(st.Uid),
		blocks: int64(st.Blocks),
		atime:  time.Unix(int64(st.Atim.Sec), int64(st.Atim.Nsec)),
		ctime:  time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)),
	}, true
}

// FileIDOf returns the device and inode of fi, a stat result, in the form
// a recording's MMAP2 records give them: st_dev is the user-space encoding
// of the device number, while MMAP2's maj and min are the kernel's
// MAJOR() and MINOR() of it (perf_event_mmap_event in
// kernel/events/core.c), so st_dev is decoded here. ok is false when fi
// does not come from stat(2), and on systems other than Linux.
func FileIDOf(fi fs.FileInfo) (id FileID, ok bool) {
	s, ok := sysStat(fi)
	if !ok {
		return FileID{}, false
	}
	return FileID{Maj: unix.Major(s.dev), Min: unix.Minor(s.dev), Ino: s.ino}, true
}

// linkInto hard-links src (following a symbolic link, AT_SYMLINK_FOLLOW)
// to name in the directory dir, with linkat relative to dir's descriptor
// so that the link cannot be redirected outside it.
func linkInto(src string, dir uintptr, name string) error {
	return unix.Linkat(unix.AT_FDCWD, src, int(dir), name, unix.AT_SYMLINK_FOLLOW)
}

// kernelRelease returns the running kernel's release (uname -r).
func kernelRelease() (string, bool) {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "", false
	}
	return unix.ByteSliceToString(u.Release[:]), true
}

// copySparse copies the first n bytes of src into dst, which is empty,
// leaving holes where src has them: only the data regions that
// lseek(SEEK_DATA, SEEK_HOLE) reports are copied (each with io.Copy
// between the two files, i.e. copy_file_range, which shares extents on
// file systems that can, btrfs and xfs), and dst is extended to n bytes.
// Where the file system cannot tell holes, everything is data.
func copySparse(dst, src *os.File, n int64) error {
	fd := int(src.Fd())
	for off := int64(0); off < n; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole from off on
		}
		if err != nil {
			data = off
		}
		if data >= n {
			break
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil || hole > n {
			hole = n
		}
		if _, err := src.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := dst.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.Copy(dst, io.LimitReader(src, hole-data)); err != nil {
			return err
		}
		off = hole
	}
	return dst.Truncate(n)
}
