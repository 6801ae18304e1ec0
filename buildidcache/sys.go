package buildidcache

import (
	"io/fs"
	"os"
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

// ForeignOwner reports whether fi is owned by neither the current user
// nor root, and by whom. perf ignores such a file where another user could
// have put it, a perf-PID.map in /tmp (dso__load in
// tools/perf/util/symbol.c) or a ~/.perfconfig (perf_config in
// tools/perf/util/config.c): its owner could name every frame, or point
// every lookup at a cache of theirs. Where stat gives no owner it reports
// false.
func ForeignOwner(fi fs.FileInfo) (uid int, foreign bool) {
	s, ok := sysStat(fi)
	return s.uid, ok && s.uid != 0 && s.uid != os.Geteuid()
}

// key is the inode's identity, to count a hard-linked file once.
func (s fileSys) key() fileKey { return fileKey{s.dev, s.ino} }
