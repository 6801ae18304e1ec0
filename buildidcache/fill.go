package buildidcache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// AddRecorded caches the binary a recording names name (a recorded path,
// untrusted) when a file with build-id want can be found for it on this
// host: what `perfcheck cache fill` does for each DSO before binaries are
// replaced. It looks where Resolver.LocalPaths does, for each of pids (the
// processes that mapped it) in turn: under the Resolver's SymFS; else
// under /proc/PID/root while that process runs, which sees its mount
// namespace — the only way to reach the binaries of a process in a
// container, whose recorded paths name files of its own root — then at
// the path itself. The first file that has build-id want is cached under
// name (a file found at the path itself under its real path, as perf's
// build_id_cache__cachedir resolves it; one found through /proc/PID/root
// under the recorded name, since the container's symbolic links cannot be
// resolved from here). A pid since reused by another process is harmless:
// every candidate's build-id is checked before it is cached.
//
// An entry already cached for want is returned as it is (Added false),
// except that files perf hard-linked into it become private copies
// (Entry.Unshared; not with Cache.HardLink). When no file exists at all
// the error wraps ErrNotFound; when files exist but none has the
// build-id, ErrMismatch (the binary changed since the recording).
func (c *Cache) AddRecorded(r *Resolver, name string, pids []int, want BuildID) (*Entry, error) {
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
	var paths []string
	seen := map[string]bool{}
	for _, pid := range append(append([]int(nil), pids...), 0) {
		for _, p := range r.LocalPaths(name, pid) {
			if !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no file at the recorded path: %w", name, ErrNotFound)
	}
	var last error
	for _, p := range paths {
		// perf files an entry under the real path of the recorded name
		// when it exists on this host (build_id_cache__cachedir): on a
		// merged-/usr system /lib/x/libc.so.6 goes under /usr/lib/x. A
		// file found through the /proc/PID/root of a process that shares
		// our view of the path is that same file, and named so too.
		cacheName := name
		if sameFile(p, filepath.Clean(name)) {
			if real, err := filepath.EvalSymlinks(filepath.Clean(name)); err == nil {
				cacheName = real
			}
		}
		e, err := c.AddFile(p, cacheName, want)
		if err == nil {
			return e, nil
		}
		// A mismatch is the likely answer; keep looking, but let any
		// other error (an unsafe name, a full disk) be the one reported.
		if last == nil || errors.Is(last, ErrMismatch) {
			last = err
		}
	}
	return nil, last
}

func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
