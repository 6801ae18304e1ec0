package check

import (
	"io/fs"
	"syscall"
)

// fileOwner is the uid that owns the file fi describes; ok is false when
// fi does not come from stat(2).
func fileOwner(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
