package buildidcache

import (
	"io/fs"
	"time"
)

// fileSys is what Linux's stat gives beyond fs.FileInfo (sys_linux.go
// fills it): the identity of the inode, its link count, the space it takes
// and its access and change times. Elsewhere it stays empty
// (sys_other.go): the cache then counts apparent sizes and modification
// times, and sees no hard links.
type fileSys struct {
	dev, ino uint64
	nlink    uint64
	uid      int
	blocks   int64 // 512-byte blocks allocated (st_blocks)
	atime    time.Time
	ctime    time.Time
}

// fileOwner returns the uid that owns fi; ok is false where stat gives
// none.
func fileOwner(fi fs.FileInfo) (uid int, ok bool) {
	s, ok := sysStat(fi)
	return s.uid, ok
}

// key is the inode's identity, to count a hard-linked file once.
func (s fileSys) key() fileKey { return fileKey{s.dev, s.ino} }
