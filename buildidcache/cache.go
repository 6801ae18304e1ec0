package buildidcache

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
)

// Cache writes, lists and prunes perf's build-id cache (~/.debug) in the
// layout perf 6.x writes and reads (build_id_cache__add in
// tools/perf/util/build-id.c):
//
//	<dir>/<name>/<build-id>/elf          the binary (debug: separate debuginfo,
//	                                      kallsyms: the kernel's, vdso: the vDSO)
//	<dir>/.build-id/<xx>/<rest>          relative symlink ../../<name>/<build-id>
//
// where <name> is the binary's absolute path without its leading slash, or
// "[kernel.kallsyms]" or "[vdso]", and <xx><rest> is the build-id in hex.
type Cache struct {
	// Dir is the cache root, e.g. DefaultBuildIDDir().
	Dir string
	// DebugDirs are searched for a separate debug file to store next to a
	// binary as "debug", as perf does; nil means /usr/lib/debug.
	DebugDirs []string
	// HardLink makes Add hard-link binaries into the cache, as perf does,
	// instead of copying them. Copying is the default because a binary
	// later overwritten in place (cp onto it, a linker writing its output
	// over the old file) would change the cached copy too and lose exactly
	// the file the cache was filled to keep.
	HardLink bool

	// copyFault, set only by tests, wraps the source of a copy: the
	// fault-injection point that proves a copy cut short leaves nothing
	// a lookup would trust.
	copyFault func(io.Reader) io.Reader
}

// Entry is one cached binary.
type Entry struct {
	BuildID buildid.ID `json:"build_id"`
	// Name is the path the binary was cached under ("/usr/bin/ls",
	// "[kernel.kallsyms]", "[vdso]").
	Name string `json:"name"`
	// Dir is the entry's directory; Files the names in it (elf, debug,
	// kallsyms, vdso, probes). For an old-style entry (the link is the
	// file itself) Dir is the link and Files is empty.
	Dir      string   `json:"dir"`
	Files    []string `json:"files"`
	OldStyle bool     `json:"old_style,omitempty"`
	// Size is the disk space the entry's files take, each inode counted
	// once across the cache.
	Size int64 `json:"size"`
	// LastUsed is the latest access or modification time of its files
	// (atime as the kernel keeps it: with relatime, at least daily).
	LastUsed time.Time `json:"last_used"`
	// Added is false when Add found the entry already present.
	Added bool `json:"added,omitempty"`
	// Unshared is set when Add found the entry present but its binary
	// hard-linked to a file outside it (perf's way), and replaced it by a
	// private copy (see Cache.HardLink).
	Unshared bool `json:"unshared,omitempty"`

	// checked are the files of an orphan as Prune examined them: only
	// these are removed, each only while it is still the same inode.
	checked []checkedFile
}

// checkedFile is a file of an orphan entry directory, by name and inode
// (zero key when the platform gives none).
type checkedFile struct {
	name string
	key  fileKey
}

// tmpMarker is in the name of every temporary file this package writes;
// Prune counts such files in the cache's size and removes them once
// nothing changed them for abandonedTemp. staleTemp is how long an
// orphan's directory must be left unchanged.
const (
	tmpMarker     = ".tmp-"
	staleTemp     = time.Hour
	abandonedTemp = 10 * time.Minute
	maxName       = 4096 // PATH_MAX
)

// NoSizeLimit, as Prune's maxSize, removes nothing for size.
const NoSizeLimit = -1

// entryName validates a name to cache a binary under and returns it
// relative to the cache root. Names come from perf.data files and are
// untrusted: they must be absolute paths without ".." components, or a
// single bracketed name such as [vdso], and must not reach into .build-id.
func entryName(name string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("cache name %q: %s: %w", name, why, ErrUnsafePath)
	}
	switch {
	case name == "":
		return bad("empty")
	case len(name) > maxName:
		return bad("too long")
	case strings.ContainsFunc(name, isControl):
		// A newline would split the name in perf buildid-cache -l and
		// our own listings; escape sequences would reach a terminal.
		return bad("control character")
	}
	if strings.HasPrefix(name, "[") {
		if !strings.HasSuffix(name, "]") || strings.ContainsRune(name, '/') || name == "[]" {
			return bad("bracketed names are one component")
		}
		return name, nil
	}
	if name[0] != '/' {
		return bad("not an absolute path")
	}
	for _, c := range strings.Split(name, "/") {
		if c == ".." {
			return bad(`".." component`)
		}
	}
	rel := strings.TrimPrefix(path.Clean(name), "/")
	if rel == "" || rel == "." {
		return bad("no file name")
	}
	if first, _, _ := strings.Cut(rel, "/"); first == ".build-id" {
		return bad("inside .build-id")
	}
	return rel, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// escapeErr explains a failed write: when a component of one of the paths
// (relative to the cache root) is a symlink, os.Root refused to follow it
// out of the cache, and the error says so and names the link.
func (c *Cache) escapeErr(root *os.Root, err error, rels ...string) error {
	return escapeErr(root, c.Dir, err, rels...)
}

// escapeErr explains err, an operation through root (opened on dir) on
// one of rels that failed: when a component of one of them is a symlink
// that os.Root refused to follow out of dir, the error says so, names the
// link and wraps ErrUnsafePath.
func escapeErr(root *os.Root, dir string, err error, rels ...string) error {
	if err == nil {
		return nil
	}
	for _, rel := range rels {
		p := ""
		for _, comp := range strings.Split(rel, "/") {
			p = path.Join(p, comp)
			st, lerr := root.Lstat(p)
			if lerr != nil {
				break
			}
			if st.Mode()&fs.ModeSymlink != 0 {
				return fmt.Errorf("%s is a symlink, not followed: %w: %w", filepath.Join(dir, p), ErrUnsafePath, err)
			}
		}
	}
	return err
}

func (c *Cache) openRoot() (*os.Root, error) {
	if c.Dir == "" {
		return nil, errors.New("build-id cache: no directory")
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	return os.OpenRoot(c.Dir)
}

func linkRel(hexID string) string {
	return path.Join(".build-id", hexID[:2], hexID[2:])
}

// Add caches the ELF file at p under its real path, as
// `perf buildid-cache -a` does, with its separate debug file when one with
// the same build-id is in the debug directories.
func (c *Cache) Add(p string) (*Entry, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	return c.AddFile(real, real, nil)
}

// AddFile caches the ELF file src under name (a recorded path, untrusted)
// when its build-id matches want; a nil want accepts the file's own
// build-id. The file is copied (or linked, with HardLink) to a temporary
// name, verified there, and renamed into place; the .build-id link is made
// last, so a lookup never sees a half-written entry.
func (c *Cache) AddFile(src, name string, want buildid.ID) (*Entry, error) {
	rel, err := entryName(name)
	if err != nil {
		return nil, err
	}
	id, err := ReadFileIdentity(src)
	if err != nil {
		return nil, err
	}
	if id.BuildID == nil {
		return nil, fmt.Errorf("%s: %w", src, ErrNoBuildID)
	}
	if want != nil && !id.BuildID.Matches(want) {
		return nil, fmt.Errorf("%w: %s has %v, want %v", ErrMismatch, src, id.BuildID, want)
	}
	role := "elf"
	if name == "[vdso]" {
		role = "vdso"
	}
	root, err := c.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	bid := id.BuildID
	if e, ok := c.existing(root, bid); ok {
		return c.keepPrivate(root, e)
	}
	dir := path.Join(rel, bid.String())
	if err := c.place(root, dir, role, src, bid); err != nil {
		return nil, c.escapeErr(root, err, dir)
	}
	if role == "elf" && !strings.HasSuffix(name, ".ko") {
		if dbg := c.findDebug(bid); dbg != "" {
			// Best effort, as in perf: a missing debug file loses DWARF,
			// not the entry.
			_ = c.place(root, dir, "debug", dbg, bid)
		}
	}
	e, err := c.link(root, dir, bid)
	return e, c.escapeErr(root, err, path.Dir(linkRel(bid.String())))
}

// AddKernel caches the running kernel's /proc/kallsyms under its build-id,
// as perf record does for [kernel.kallsyms]. Copy it only while the
// recording's kernel is the running one.
func (c *Cache) AddKernel() (*Entry, error) {
	bid, err := KernelBuildID()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return nil, err
	}
	return c.addBytes("[kernel.kallsyms]", "kallsyms", bid, b)
}

// AddVDSO caches this process's vDSO, as perf record does for [vdso]. All
// 64-bit processes on one kernel share it.
func (c *Cache) AddVDSO() (*Entry, error) {
	img, id, err := VDSO()
	if err != nil {
		return nil, err
	}
	if id.BuildID == nil {
		return nil, fmt.Errorf("[vdso]: %w", ErrNoBuildID)
	}
	return c.addBytes("[vdso]", "vdso", id.BuildID, img)
}

func (c *Cache) addBytes(name, role string, bid buildid.ID, b []byte) (*Entry, error) {
	root, err := c.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if e, ok := c.existing(root, bid); ok {
		return e, nil
	}
	dir := path.Join(name, bid.String())
	e, err := c.writeBytes(root, dir, role, bid, b)
	return e, c.escapeErr(root, err, dir, path.Dir(linkRel(bid.String())))
}

func (c *Cache) writeBytes(root *os.Root, dir, role string, bid buildid.ID, b []byte) (*Entry, error) {
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp, f, err := createTemp(root, dir, role)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, path.Join(dir, role))
	}
	if err != nil {
		root.Remove(tmp)
		return nil, err
	}
	return c.link(root, dir, bid)
}

// Has returns the entry cached for bid, if a complete one is present.
func (c *Cache) Has(bid buildid.ID) (*Entry, bool) {
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return nil, false
	}
	defer root.Close()
	for _, name := range lookupNames(bid) {
		b, _ := buildid.Parse(name)
		if e, ok := c.existing(root, b); ok {
			return e, true
		}
	}
	return nil, false
}

// existing returns the entry already linked for bid, if its main file is
// present; perf keeps the first name a build-id was cached under.
func (c *Cache) existing(root *os.Root, bid buildid.ID) (*Entry, bool) {
	lr := linkRel(bid.String())
	if _, err := root.Lstat(lr); err != nil {
		return nil, false
	}
	e, err := c.entry(root, lr, bid, map[fileKey]bool{})
	if err != nil || (!e.OldStyle && len(mainFiles(e.Files)) == 0) {
		return nil, false
	}
	// The entry must still hold the binary it claims: a hard link whose
	// original was overwritten in place no longer does, and is rewritten.
	check := lr
	if !e.OldStyle {
		rel, _ := filepath.Rel(c.Dir, e.Dir)
		switch main := mainFiles(e.Files)[0]; main {
		case "kallsyms":
			return e, true // no note to check
		default:
			check = path.Join(filepath.ToSlash(rel), main)
		}
	}
	f, err := root.Open(check)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if !verifyOpen(f, bid) {
		return nil, false
	}
	return e, true
}

// keepPrivate makes an existing entry's binary a private copy when it is
// a hard link to a file elsewhere, unless the Cache hard-links by choice.
// perf hard-links what it caches (perf record, perf buildid-cache -a,
// perf inject --jit); a file later rewritten in place changes the cached
// one with it, and the cache loses exactly the binary it was filled to
// keep. perf inject --jit does that to its own entries: a second injection
// of a recording opens every jitted-PID-N.so with O_TRUNC and writes code
// with a new random build-id into the inode the cache links
// (docs/buildidcache.md). A debug
// file stays linked: it comes from a debug directory's .build-id tree,
// whose files package managers replace by renaming, never in place, and
// it is usually the larger file.
func (c *Cache) keepPrivate(root *os.Root, e *Entry) (*Entry, error) {
	if c.HardLink || e.OldStyle {
		return e, nil
	}
	rel, err := filepath.Rel(c.Dir, e.Dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return e, nil
	}
	rel = filepath.ToSlash(rel)
	done, err := c.unshare(root, rel, "elf", e.BuildID)
	if err != nil {
		return nil, c.escapeErr(root, err, rel)
	}
	e.Unshared = done
	return e, nil
}

// unshare replaces dir/role by a verified copy of itself when its inode
// has other names; it reports whether it did.
func (c *Cache) unshare(root *os.Root, dir, role string, bid buildid.ID) (bool, error) {
	final := path.Join(dir, role)
	st, err := root.Lstat(final)
	if err != nil || !st.Mode().IsRegular() {
		return false, nil
	}
	sys, ok := sysStat(st)
	if !ok || sys.nlink <= 1 {
		return false, nil
	}
	in, err := root.Open(final)
	if err != nil {
		return false, err
	}
	defer in.Close()
	tmp, out, err := createTemp(root, dir, role)
	if err != nil {
		return false, err
	}
	out.Chmod(st.Mode().Perm())
	err = c.copyELF(out, in, final)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// The other name may be rewritten while we copy: only a copy
		// that still has the entry's build-id replaces the link.
		var f *os.File
		if f, err = root.Open(tmp); err == nil {
			if !verifyOpen(f, bid) {
				err = fmt.Errorf("%w: %s changed while it was being copied", ErrMismatch, final)
			}
			f.Close()
		}
	}
	if err == nil {
		err = root.Rename(tmp, final)
	}
	if err != nil {
		root.Remove(tmp)
		return false, err
	}
	return true, nil
}

func mainFiles(files []string) []string {
	var out []string
	for _, f := range files {
		switch f {
		case "elf", "kallsyms", "vdso":
			out = append(out, f)
		}
	}
	return out
}

// createTemp creates a temporary file for a cache entry's role in dir,
// through root, to be renamed into place once complete.
func createTemp(root *os.Root, dir, role string) (string, *os.File, error) {
	return openTemp(root, dir, role, os.O_WRONLY, 0o644)
}

// openTemp creates a new file in dir named after role with a random
// suffix and tmpMarker, which prune recognises as a temporary.
func openTemp(root *os.Root, dir, role string, mode int, perm os.FileMode) (string, *os.File, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := path.Join(dir, "."+role+tmpMarker+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_CREATE|os.O_EXCL|mode, perm)
	return tmp, f, err
}

// place puts a verified copy (or hard link) of src at dir/role, unless a
// verified file is already there.
func (c *Cache) place(root *os.Root, dir, role, src string, bid buildid.ID) error {
	final := path.Join(dir, role)
	if f, err := root.Open(final); err == nil {
		ok := verifyOpen(f, bid)
		f.Close()
		if ok {
			return nil
		}
	}
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := c.writeTemp(root, dir, role, src)
	if err != nil {
		return err
	}
	f, err := root.Open(tmp)
	if err != nil {
		root.Remove(tmp)
		return err
	}
	ok := verifyOpen(f, bid)
	f.Close()
	if !ok {
		// src changed between reading its build-id and copying it.
		root.Remove(tmp)
		return fmt.Errorf("%w: %s changed while it was being cached", ErrMismatch, src)
	}
	if err := root.Rename(tmp, final); err != nil {
		root.Remove(tmp)
		return err
	}
	return nil
}

func verifyOpen(f *os.File, bid buildid.ID) bool {
	id, err := identityOf(f, f.Name())
	return err == nil && id.BuildID.Matches(bid)
}

// writeTemp links or copies src to a new temporary file in dir. The hard
// link is made with linkat relative to a directory descriptor opened
// through root, so that it cannot be redirected outside the cache.
func (c *Cache) writeTemp(root *os.Root, dir, role, src string) (string, error) {
	if c.HardLink {
		var rnd [6]byte
		rand.Read(rnd[:])
		base := "." + role + tmpMarker + hex.EncodeToString(rnd[:])
		d, err := root.Open(dir)
		if err == nil {
			// AT_SYMLINK_FOLLOW: src may be a symlink (the
			// .build-id/xx/rest.debug files of debug directories usually
			// are); without it linkat links the symlink itself, and the
			// cache would hold a link that leads out of it.
			err = linkInto(src, d.Fd(), base)
			d.Close()
			if err == nil {
				return path.Join(dir, base), nil
			}
		}
		// EXDEV, EPERM (protected_hardlinks): copy instead, as perf does.
	}
	in, err := OpenRegular(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp, out, err := createTemp(root, dir, role)
	if err != nil {
		return "", err
	}
	if st, err := in.Stat(); err == nil {
		out.Chmod(st.Mode().Perm())
	}
	err = c.copyELF(out, in, src)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		root.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// copyELF copies the ELF file in into out, which is empty: only the bytes
// its headers describe (elfExtent; all of a file that is not ELF, such as
// a compressed module), and only the data in them, holes left as holes
// (copySparse). A file that is a few kilobytes of ELF followed by a hole
// of gigabytes, or by anything, costs the cache the kilobytes.
func (c *Cache) copyELF(out, in *os.File, name string) error {
	st, err := in.Stat()
	if err != nil {
		return err
	}
	n := st.Size()
	if end, err := elfExtent(in, n, name); err == nil && end < n {
		n = end
	}
	if c.copyFault != nil {
		_, err := io.Copy(out, io.LimitReader(c.copyFault(in), n))
		return err
	}
	return copySparse(out, in, n)
}

// findDebug returns a separate debug file for bid from the debug
// directories (perf's build_id_cache__find_debug), or "".
func (c *Cache) findDebug(bid buildid.ID) string {
	dirs := c.DebugDirs
	if dirs == nil {
		dirs = []string{"/usr/lib/debug"}
	}
	h := bid.String()
	for _, d := range dirs {
		p := buildIDPath(d, h) + ".debug"
		if id, err := ReadFileIdentity(p); err == nil && id.BuildID.Matches(bid) {
			return p
		}
	}
	return ""
}

// link makes .build-id/xx/rest point at dir, atomically: a symlink under a
// temporary name, renamed over the final one.
func (c *Cache) link(root *os.Root, dir string, bid buildid.ID) (*Entry, error) {
	lr := linkRel(bid.String())
	if err := root.MkdirAll(path.Dir(lr), 0o755); err != nil {
		return nil, err
	}
	target := "../../" + dir
	if cur, err := root.Readlink(lr); err != nil || cur != target {
		var rnd [6]byte
		rand.Read(rnd[:])
		tmp := path.Join(path.Dir(lr), "."+path.Base(lr)+tmpMarker+hex.EncodeToString(rnd[:]))
		if err := root.Symlink(target, tmp); err != nil {
			return nil, err
		}
		if err := root.Rename(tmp, lr); err != nil {
			root.Remove(tmp)
			return nil, err
		}
	}
	e, err := c.entry(root, lr, bid, map[fileKey]bool{})
	if err != nil {
		return nil, err
	}
	e.Added = true
	return e, nil
}

type fileKey struct{ dev, ino uint64 }

// entry describes the entry that link lr points to. The link target is
// resolved lexically and must stay inside the cache.
func (c *Cache) entry(root *os.Root, lr string, bid buildid.ID, seen map[fileKey]bool) (*Entry, error) {
	e := &Entry{BuildID: bid}
	st, err := root.Lstat(lr)
	if err != nil {
		return nil, err
	}
	var files []string
	switch {
	case st.Mode().IsRegular():
		e.OldStyle, e.Dir = true, filepath.Join(c.Dir, lr)
		files = []string{lr}
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := root.Readlink(lr)
		if err != nil {
			return nil, err
		}
		dir := path.Clean(path.Join(path.Dir(lr), target))
		if path.IsAbs(target) || dir == ".." || strings.HasPrefix(dir, "../") {
			return nil, fmt.Errorf("%s: link %q leads outside the cache: %w", lr, target, ErrUnsafePath)
		}
		if err := checkEntryDir(dir, bid); err != nil {
			return nil, fmt.Errorf("%s: link %q: %w", lr, target, err)
		}
		e.Dir = filepath.Join(c.Dir, dir)
		e.Name = strings.TrimSuffix(path.Dir(dir), "/")
		if !strings.HasPrefix(e.Name, "[") {
			e.Name = "/" + e.Name
		}
		ents, err := fs.ReadDir(root.FS(), dir)
		if err != nil {
			if ist, err2 := root.Stat(dir); err2 == nil && ist.Mode().IsRegular() {
				// A link to a file: old style.
				e.OldStyle = true
				files = []string{dir}
				break
			}
			return nil, err
		}
		for _, d := range ents {
			if strings.Contains(d.Name(), tmpMarker) || d.IsDir() {
				continue
			}
			e.Files = append(e.Files, d.Name())
			files = append(files, path.Join(dir, d.Name()))
		}
	default:
		return nil, fmt.Errorf("%s: neither a link nor a file", lr)
	}
	for _, f := range files {
		st, err := root.Stat(f)
		if err != nil {
			continue
		}
		if sys, ok := sysStat(st); ok {
			e.LastUsed = latest(e.LastUsed, sys.atime)
			k := sys.key()
			if !seen[k] {
				seen[k] = true
				e.Size += sys.blocks * 512
			}
		} else {
			e.Size += st.Size()
		}
		e.LastUsed = latest(e.LastUsed, st.ModTime())
	}
	return e, nil
}

// checkEntryDir accepts the target of a .build-id link (relative to the
// cache root, cleaned) only when it has the shape perf writes,
// <name>/<build-id> (build_id_cache__linkname in tools/perf/util/build-id.c):
// at least two components, the first not .build-id, the last the link's own
// build-id. Anything else is a planted or corrupt link; trusting it would let
// List report, and Prune remove, whatever directory it names (.build-id
// itself, or another entry's parent).
func checkEntryDir(dir string, bid buildid.ID) error {
	first, _, ok := strings.Cut(dir, "/")
	if !ok || first == ".build-id" || first == "." || first == ".." {
		return fmt.Errorf("target %q is not an entry directory: %w", dir, ErrUnsafePath)
	}
	base, err := buildid.Parse(path.Base(dir))
	if err != nil || !base.Matches(bid) {
		return fmt.Errorf("target %q is not named by the link's build-id %v: %w", dir, bid, ErrUnsafePath)
	}
	return nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// List returns every entry reachable through .build-id links, sorted by
// name then build-id. Links that lead nowhere are skipped.
func (c *Cache) List() ([]Entry, error) {
	root, err := os.OpenRoot(c.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return c.list(root, nil)
}

// list lists the entries; a fan-out directory of .build-id it cannot read
// is skipped, and said through warn when warn is not nil.
func (c *Cache) list(root *os.Root, warn func(string)) ([]Entry, error) {
	var out []Entry
	seen := map[fileKey]bool{}
	tops, err := fs.ReadDir(root.FS(), ".build-id")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, t := range tops {
		if !t.IsDir() || len(t.Name()) != 2 {
			continue
		}
		links, err := fs.ReadDir(root.FS(), path.Join(".build-id", t.Name()))
		if err != nil {
			if warn != nil {
				warn(fmt.Sprintf("entries linked from .build-id/%s not counted: %v", t.Name(), err))
			}
			continue
		}
		for _, l := range links {
			if strings.Contains(l.Name(), tmpMarker) {
				continue
			}
			bid, err := buildid.Parse(t.Name() + l.Name())
			if err != nil {
				continue
			}
			e, err := c.entry(root, path.Join(".build-id", t.Name(), l.Name()), bid, seen)
			if err != nil {
				continue
			}
			out = append(out, *e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].BuildID.String() < out[j].BuildID.String()
	})
	return out, nil
}

// PruneReport says what Prune removed.
type PruneReport struct {
	Removed    []Entry `json:"removed"`
	Kept       int     `json:"kept"`
	SizeBefore int64   `json:"size_before"`
	SizeAfter  int64   `json:"size_after"`
	// StaleTemps counts temporary files of interrupted writes removed
	// (with dryRun, to be removed). SizeBefore counts every temporary
	// file, SizeAfter those kept (writes in progress).
	StaleTemps int `json:"stale_temps"`
	// Orphans are entry directories no .build-id link leads to any more
	// (removed, or with dryRun to be removed), whatever maxSize and
	// olderThan say: no lookup, perf's or ours, can reach them. Their
	// size is in OrphanSize, not in SizeBefore or SizeAfter.
	Orphans    []Entry `json:"orphans"`
	OrphanSize int64   `json:"orphan_size"`
	// Warnings say what Prune did not do and why: entries not counted and
	// orphans not looked for because a .build-id directory or link could
	// not be read (an entry behind it would look orphaned), or an orphan
	// left in place because it changed since it was examined.
	Warnings []string `json:"warnings,omitempty"`
}

// Prune removes entries last used before now-olderThan (when olderThan >
// 0), then the least recently used ones until the cache takes at most
// maxSize bytes (0 empties it; NoSizeLimit, or any negative size, removes
// nothing for size). With dryRun it only reports. It removes the
// .build-id link first, so a concurrent lookup sees either the whole
// entry or none. Temporary files count in the cache's size; those nothing
// changed for ten minutes are left from interrupted writes and removed
// (an add in progress changes its file with every write), the others
// kept, so a write in progress is never cut short.
func (c *Cache) Prune(maxSize int64, olderThan time.Duration, now time.Time, dryRun bool) (*PruneReport, error) {
	root, err := os.OpenRoot(c.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return &PruneReport{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	rep := &PruneReport{}
	entries, err := c.list(root, func(w string) { rep.Warnings = append(rep.Warnings, w) })
	if err != nil {
		return nil, err
	}
	temps := findTemps(root, now)
	for _, e := range entries {
		rep.SizeBefore += e.Size
	}
	size := rep.SizeBefore
	for _, t := range temps {
		rep.SizeBefore += t.size
		if !t.abandoned {
			size += t.size // stays: a write in progress
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].LastUsed.Before(entries[j].LastUsed) })
	var keep []Entry
	for i, e := range entries {
		old := olderThan > 0 && e.LastUsed.Before(now.Add(-olderThan))
		big := maxSize >= 0 && size > maxSize
		if !old && !big {
			keep = append(keep, entries[i:]...)
			break
		}
		if !dryRun {
			if err := c.remove(root, e); err != nil {
				return rep, err
			}
		}
		size -= e.Size
		rep.Removed = append(rep.Removed, e)
	}
	// Entries are sorted oldest first, so once one is neither old nor
	// needed for space the rest are kept.
	rep.Kept = len(keep)
	rep.SizeAfter = size
	// Orphans are looked for after the removals: an entry removed above
	// went with its directory, and one only reported (dryRun) still has
	// its link.
	c.pruneOrphans(root, now, dryRun, rep)
	for _, t := range temps {
		if t.abandoned && (dryRun || root.Remove(t.name) == nil) {
			rep.StaleTemps++
		}
	}
	return rep, nil
}

// tempFile is a temporary file found in the cache.
type tempFile struct {
	name      string // relative to the cache root
	size      int64  // disk usage
	abandoned bool   // unchanged for abandonedTemp
}

// findTemps lists the cache's temporary files. A file is abandoned when
// its contents (mtime) did not change for abandonedTemp — nor, for a hard
// link, which keeps its source's mtime, its inode (ctime: the link's
// creation).
func findTemps(root *os.Root, now time.Time) []tempFile {
	var temps []tempFile
	fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), tmpMarker) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		t := tempFile{name: p, size: info.Size()}
		changed := info.ModTime()
		if sys, ok := sysStat(info); ok {
			t.size = sys.blocks * 512
			if sys.nlink > 1 {
				changed = latest(changed, sys.ctime)
			}
		}
		t.abandoned = now.Sub(changed) > abandonedTemp
		temps = append(temps, t)
		return nil
	})
	return temps
}

// pruneOrphans finds the orphans (see orphans) and, unless dryRun,
// removes them, recording them and anything it did not do in rep. It does
// nothing but warn when the .build-id links cannot all be read: an entry
// behind an unreadable fan-out directory or link would look orphaned. It
// does nothing at all when there is no .build-id directory: then no
// entry is linked, and a directory that is not perf's cache (a mistyped
// --buildid-dir) must not be searched for directories to remove.
func (c *Cache) pruneOrphans(root *os.Root, now time.Time, dryRun bool, rep *PruneReport) {
	linked, err := linkedDirs(root)
	if errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errLinkScan) {
		return // no .build-id; a link or fan-out directory gone mid-scan is warned of below
	}
	if err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("orphaned entries not looked for: %v", err))
		return
	}
	orphans, err := c.orphans(root, linked, now)
	if err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("orphaned entries not looked for: %v", err))
		return
	}
	for _, o := range orphans {
		if !dryRun {
			if err := c.removeOrphan(root, o); err != nil {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("orphan %s left in place: %v", o.Dir, err))
				if errors.Is(err, errLinkScan) {
					return // the next would fail the same way
				}
				continue
			}
		}
		rep.OrphanSize += o.Size
		rep.Orphans = append(rep.Orphans, o)
	}
}

// entryFiles are the names perf and Add put in an entry directory that
// may be removed with it (build_id_cache__add in
// tools/perf/util/build-id.c). probes, perf's SDT cache
// (tools/perf/util/probe-file.c), is not among them: perf probe opens it
// by the entry's named path (probe_cache__open via
// build_id_cache__cachedir), with no link, so a directory holding it is
// never an orphan.
var entryFiles = map[string]bool{"elf": true, "debug": true, "kallsyms": true, "vdso": true}

// buildIDHexLens are the lengths, in hex digits, of the build-ids whose
// entry directories Prune may take for orphans: 20 bytes (sha1, the
// default of GNU ld, gold, lld and Go's -B gobuildid), 16 (md5, uuid) and
// 8 (lld's fast, xxhash). Older perf padded every build-id to 20 bytes,
// which is 40 digits too. An entry named by a build-id of another length
// is never taken for an orphan: the cost is space, while a short hex name
// ("2024") is as likely to be a directory of the user's.
var buildIDHexLens = map[int]bool{40: true, 32: true, 16: true}

// errLinkScan reports that the .build-id links could not all be read.
var errLinkScan = errors.New("cannot read every .build-id link")

// linkedDirs returns every directory a .build-id link leads to, relative
// to the cache root and cleaned, whatever its shape, and the parent of
// each target too (a link to <dir>/elf protects <dir>). Targets are read,
// never followed. Any directory or link it cannot read is an error
// wrapping errLinkScan, since an entry behind it would look unlinked;
// an absent .build-id is an error wrapping fs.ErrNotExist.
func linkedDirs(root *os.Root) (map[string]bool, error) {
	linked := map[string]bool{}
	tops, err := fs.ReadDir(root.FS(), ".build-id")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errLinkScan, err)
	}
	for _, t := range tops {
		if !t.IsDir() {
			continue
		}
		fan := path.Join(".build-id", t.Name())
		links, err := fs.ReadDir(root.FS(), fan)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errLinkScan, err)
		}
		for _, l := range links {
			if l.Type()&fs.ModeSymlink == 0 {
				continue
			}
			target, err := root.Readlink(path.Join(fan, l.Name()))
			if err != nil {
				return nil, fmt.Errorf("%w: %w", errLinkScan, err)
			}
			if path.IsAbs(target) {
				continue
			}
			d := path.Clean(path.Join(fan, target))
			linked[d] = true
			linked[path.Dir(d)] = true
		}
	}
	return linked, nil
}

// orphans finds entry directories no .build-id link leads to: perf leaves
// them when a build-id already linked under one name is cached under
// another (the link keeps the first), and an interrupted removal leaves
// one whose link went first. A directory is an orphan only when all of
// this holds, so that nothing but a dead entry is ever taken:
//
//   - it is <name>/<build-id>, its base the lowercase hex build-id perf
//     writes, of a real build-id length (buildIDHexLens), outside
//     .build-id and outside the bracketed names:
//     [kernel.kallsyms]/<build-id>/kallsyms is read by its path, with no
//     link (build_id_cache__kallsyms_path), so it is never an orphan;
//   - it holds only regular files perf or Add write there (elf, debug,
//     kallsyms, vdso) or this package's temporary files: a directory with
//     anything else, subdirectories included, is part of a cached path
//     that merely looks like a build-id, and is walked into; one with
//     perf probe's probes file is read by its path (see entryFiles);
//   - nothing in it changed for staleTemp (an hour), by mtime or ctime
//     (a hard link made just now keeps its source's mtime): an add in
//     progress creates the directory and its files before the link.
//
// The walk is fs.WalkDir over the os.Root, which reports symbolic links
// without following them, and the root refuses any path out of the cache.
func (c *Cache) orphans(root *os.Root, linked map[string]bool, now time.Time) ([]Entry, error) {
	var out []Entry
	seen := map[fileKey]bool{}
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // an unreadable directory is left alone
		}
		if p == "." || !d.IsDir() {
			return nil
		}
		if first, _, _ := strings.Cut(p, "/"); first == ".build-id" || strings.HasPrefix(first, "[") {
			return fs.SkipDir
		}
		base := path.Base(p)
		bid, perr := buildid.Parse(base)
		if perr != nil || bid.String() != base || !buildIDHexLens[len(base)] || bid.IsZero() || path.Dir(p) == "." || linked[p] {
			return nil
		}
		e, ok := c.orphanEntry(root, p, bid, now, seen)
		if !ok {
			return nil
		}
		out = append(out, *e)
		return fs.SkipDir
	})
	return out, err
}

// orphanEntry describes dir as an Entry when its contents make it an
// orphan candidate (see orphans).
func (c *Cache) orphanEntry(root *os.Root, dir string, bid buildid.ID, now time.Time, seen map[fileKey]bool) (*Entry, bool) {
	ents, err := fs.ReadDir(root.FS(), dir)
	if err != nil {
		return nil, false
	}
	dst, err := root.Lstat(dir)
	if err != nil {
		return nil, false
	}
	fresh := now.Add(-staleTemp)
	if dst.ModTime().After(fresh) {
		return nil, false
	}
	e := &Entry{BuildID: bid, Dir: filepath.Join(c.Dir, filepath.FromSlash(dir)), Name: "/" + path.Dir(dir)}
	type sized struct {
		k fileKey // zero when the platform gives no inode
		n int64
	}
	var sizes []sized
	for _, d := range ents {
		name := d.Name()
		if !d.Type().IsRegular() || !(entryFiles[name] || strings.Contains(name, tmpMarker)) {
			return nil, false
		}
		st, err := root.Lstat(path.Join(dir, name))
		if err != nil {
			return nil, false
		}
		if st.ModTime().After(fresh) {
			return nil, false
		}
		e.LastUsed = latest(e.LastUsed, st.ModTime())
		if sys, ok := sysStat(st); ok {
			if sys.ctime.After(fresh) {
				return nil, false
			}
			e.LastUsed = latest(e.LastUsed, sys.atime)
			k := sys.key()
			sizes = append(sizes, sized{k, sys.blocks * 512})
			e.checked = append(e.checked, checkedFile{name, k})
		} else {
			sizes = append(sizes, sized{n: st.Size()})
			e.checked = append(e.checked, checkedFile{name: name})
		}
		if !strings.Contains(name, tmpMarker) {
			e.Files = append(e.Files, name)
		}
	}
	for _, s := range sizes {
		if s.k == (fileKey{}) || !seen[s.k] {
			seen[s.k] = true
			e.Size += s.n
		}
	}
	return e, true
}

// removeOrphan removes an orphan entry directory and the parents it
// leaves empty, after checking again that no link leads to it (an add may
// have linked it since the walk) and that it has the shape of an entry.
// It removes only the files orphanEntry examined, each only while it is
// the same inode, then the directory, which fails when anything else is
// in it: never RemoveAll, which would take whatever appeared since.
func (c *Cache) removeOrphan(root *os.Root, o Entry) error {
	rel, err := filepath.Rel(c.Dir, o.Dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s: not inside %s: %w", o.Dir, c.Dir, ErrUnsafePath)
	}
	rel = filepath.ToSlash(rel)
	if err := checkEntryDir(rel, o.BuildID); err != nil {
		return fmt.Errorf("%s: not removed: %w", o.Dir, err)
	}
	linked, err := linkedDirs(root)
	if err != nil {
		return err
	}
	if linked[rel] {
		return errors.New("linked since it was examined")
	}
	for _, f := range o.checked {
		p := path.Join(rel, f.name)
		st, err := root.Lstat(p)
		if err != nil {
			return err
		}
		sys, ok := sysStat(st)
		if !st.Mode().IsRegular() || (ok && f.key != sys.key()) {
			return fmt.Errorf("%s changed since it was examined", f.name)
		}
		if err := root.Remove(p); err != nil {
			return err
		}
	}
	if err := root.Remove(rel); err != nil {
		return err
	}
	removeEmptyParents(root, path.Dir(rel))
	return nil
}

// remove removes a linked entry: its link first, so that a concurrent
// lookup sees the whole entry or none, then the files entry listed and
// the directory, which is left in place when anything else is in it (a
// write in progress, a subdirectory of another cached path): never
// RemoveAll.
func (c *Cache) remove(root *os.Root, e Entry) error {
	lr := linkRel(e.BuildID.String())
	if err := root.Remove(lr); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	removeEmptyParents(root, path.Dir(lr))
	if e.OldStyle {
		return nil
	}
	rel, err := filepath.Rel(c.Dir, e.Dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s: not inside %s: %w", e.Dir, c.Dir, ErrUnsafePath)
	}
	rel = filepath.ToSlash(rel)
	// entry checked this already; checked again here because it decides
	// which directory's files go.
	if err := checkEntryDir(rel, e.BuildID); err != nil {
		return fmt.Errorf("%s: not removed: %w", e.Dir, err)
	}
	for _, f := range e.Files {
		p := path.Join(rel, f)
		if st, err := root.Lstat(p); err == nil && !st.IsDir() {
			if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	removeEmptyParents(root, rel)
	return nil
}

// removeEmptyParents removes dir and its parents while they are empty
// (Remove fails on a non-empty directory), stopping at the root.
func removeEmptyParents(root *os.Root, dir string) {
	for dir != "." && dir != "/" && dir != "" {
		if root.Remove(dir) != nil {
			return
		}
		dir = path.Dir(dir)
	}
}
