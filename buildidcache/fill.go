package buildidcache

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/perfcheck/perfcheck/buildid"
)

// FileID is a mapped file's device and inode as a recording gives them
// (MMAP2 records without --buildid-mmap): the device's major and minor
// numbers and the inode number.
type FileID struct {
	Maj, Min uint32
	Ino      uint64
}

// AddRecordedMapping caches the binary a recording names name (a recorded
// path, untrusted) when a file with build-id want can be found for it on
// this host: what `perfcheck cache fill` does for each DSO before binaries
// are replaced.
//
// It looks first where the host's own lookups do: under the Resolver's
// SymFS, or else at the path itself; a file there is cached under its
// real path, as perf's build_id_cache__cachedir resolves it. Only when
// nothing there has build-id want, and without SymFS, does it look under
// /proc/PID/root of each of pids (the processes that mapped it; pass
// them only under Query.PID's rule: a recording made on this host since
// it last booted) while that process runs: the only way to reach the
// binaries of a process in a container, whose recorded paths name files
// of its own root. Such a file is another process's, and a build-id note
// is only bytes its owner wrote, so it is taken only when it is also the
// file that was mapped: the inode mapped (when the recording gave one; on
// a device that stat reports as anonymous, overlayfs or a btrfs
// subvolume, only the inode number can be compared), else an inode that
// process maps now (its /proc/PID/maps). It is always copied, never hard-linked (the container
// owns that inode and may rewrite it), from the descriptor whose inode was
// checked, and cached under the recorded name, since the container's
// symbolic links cannot be resolved from here. A pid since reused by
// another process is harmless: every candidate's build-id is checked.
//
// An entry already cached for want is returned as it is (Added false),
// except that files perf hard-linked into it become private copies
// (Entry.Unshared; not with Cache.HardLink). When no file exists at all
// the error wraps ErrNotFound; when files exist but none has the
// build-id, or the identity, ErrMismatch (the binary changed since the
// recording).
func (c *Cache) AddRecordedMapping(r *Resolver, name string, pids []int, want buildid.ID, mapped *FileID) (*Entry, error) {
	if want.IsZero() {
		return nil, fmt.Errorf("%s: %w", name, ErrNoBuildID)
	}
	// Already cached: nothing to look for, but a hard link perf made is
	// turned into a private copy (keepPrivate) before the file it shares
	// is replaced in place.
	if e, ok := c.Has(want); ok {
		root, err := c.openRoot()
		if err != nil {
			return nil, err
		}
		defer root.Close()
		return c.keepPrivate(root, e)
	}
	var last error
	keep := func(err error) {
		// A mismatch is the likely answer; keep looking, but let any
		// other error (an unsafe name, a full disk) be the one reported.
		if last == nil || errors.Is(last, ErrMismatch) {
			last = err
		}
	}
	// The host's file (or SymFS's) first.
	for _, p := range r.LocalPaths(name, 0) {
		cacheName := name
		if r.symfs == "" {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				cacheName = real
			}
		}
		e, err := c.AddFile(p, cacheName, want)
		if err == nil {
			return e, nil
		}
		keep(err)
	}
	if r.symfs == "" {
		clean := filepath.Clean("/" + name)
		seen := map[int]bool{}
		for _, pid := range pids {
			if pid <= 0 || seen[pid] {
				continue
			}
			seen[pid] = true
			e, err := c.addFromProcRoot(pid, clean, name, want, mapped)
			if err == nil {
				return e, nil
			}
			if !errors.Is(err, fs.ErrNotExist) {
				keep(err)
			}
		}
	}
	if last == nil {
		return nil, fmt.Errorf("%s: no file at the recorded path: %w", name, ErrNotFound)
	}
	return nil, last
}

// addFromProcRoot caches <path> as process pid sees it, under name, when
// it is the inode that was mapped (see AddRecordedMapping). The file is
// opened once, its inode checked on the descriptor, and copied from that
// descriptor (/proc/self/fd/N reopens the same inode), so that it cannot
// be swapped between the check and the copy.
func (c *Cache) addFromProcRoot(pid int, path, name string, want buildid.ID, mapped *FileID) (*Entry, error) {
	p := "/proc/" + strconv.Itoa(pid) + "/root" + path
	f, err := OpenRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	have, ok := FileIDOf(st)
	if !ok {
		return nil, fmt.Errorf("%s: no inode to compare: %w", p, ErrMismatch)
	}
	if mapped != nil {
		if !have.sameAs(*mapped) {
			return nil, fmt.Errorf("%w: %s is inode %d on %d:%d, the recording mapped inode %d on %d:%d",
				ErrMismatch, p, have.Ino, have.Maj, have.Min, mapped.Ino, mapped.Maj, mapped.Min)
		}
	} else {
		maps, err := mappedFiles("/proc/" + strconv.Itoa(pid) + "/maps")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if !slices.ContainsFunc(maps, have.sameAs) {
			return nil, fmt.Errorf("%w: %s (inode %d on %d:%d) is not a file process %d maps; the recording gave no inode to compare",
				ErrMismatch, p, have.Ino, have.Maj, have.Min, pid)
		}
	}
	copying := *c
	copying.HardLink = false
	e, err := copying.AddFile("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), name, want)
	if err != nil {
		// Name the file as the user knows it, not our descriptor.
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return e, nil
}

// sameAs says whether a file stat reports as have is the mapped file m.
// Both devices must match, except when stat reports an anonymous device
// (major 0) and the mapping a real one: overlayfs, which containers run
// on, and btrfs subvolumes report their own anonymous device for a file
// whose mapping (file_inode in perf_event_mmap, kernel/events/core.c, and
// in /proc/PID/maps) names the underlying file system's; the inode
// numbers are the underlying ones in both.
func (have FileID) sameAs(m FileID) bool {
	if have.Ino != m.Ino {
		return false
	}
	return have.Maj == m.Maj && have.Min == m.Min || have.Maj == 0 && m.Maj != 0
}

// mappedFiles returns the device and inode of every file mapping in a
// /proc/PID/maps file (scanMaps).
func mappedFiles(maps string) ([]FileID, error) {
	var out []FileID
	err := scanMaps(maps, func(fields []string) (bool, error) {
		if len(fields) < 5 {
			return false, nil
		}
		majs, mins, ok := strings.Cut(fields[3], ":")
		ino, err1 := strconv.ParseUint(fields[4], 10, 64)
		maj, err2 := strconv.ParseUint(majs, 16, 32)
		min, err3 := strconv.ParseUint(mins, 16, 32)
		if ok && err1 == nil && err2 == nil && err3 == nil && ino != 0 {
			out = append(out, FileID{Maj: uint32(maj), Min: uint32(min), Ino: ino})
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
