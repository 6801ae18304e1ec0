package buildidcache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
)

// perfCacheFiles are the files perf may keep in an entry directory
// (build_id_cache__basename in tools/perf/util/build-id.c), richest last
// is not implied: each is verified and ranked on its own.
var perfCacheFiles = map[dso.Kind][]string{
	dso.File:   {"elf", "debug"},
	dso.Module: {"elf", "debug"},
	dso.Kernel: {"kallsyms", "elf", "debug"},
	dso.VDSO:   {"vdso", "elf"},
}

// lookPerfCache looks in perf's cache: <root>/.build-id/xx/rest is a
// relative symlink to <root>/<path>/<build-id>/ holding elf, debug,
// kallsyms or vdso; in caches from perf before 4.x the link (or the file)
// is the binary itself. Kernel entries of the oldest style are files at
// <root>/[kernel.kallsyms]/<build-id>.
func (r *Resolver) lookPerfCache(_ context.Context, s *search) {
	if r.buildIDDir == "" {
		return
	}
	const loc = "perf-cache"
	for _, name := range lookupNames(s.q.BuildID) {
		link := buildIDPath(r.buildIDDir, name)
		st, err := os.Stat(link)
		if err != nil {
			s.tried = append(s.tried, loc+": "+link)
			continue
		}
		if st.Mode().IsRegular() {
			r.checkCacheFile(s, link, "elf")
			continue
		}
		if !st.IsDir() {
			continue
		}
		for _, f := range perfCacheFiles[s.q.Kind] {
			r.checkCacheFile(s, filepath.Join(link, f), f)
		}
	}
	if s.q.Kind == dso.Kernel && len(s.verified) == 0 {
		for _, name := range lookupNames(s.q.BuildID) {
			r.checkCacheFile(s, filepath.Join(r.buildIDDir, "[kernel.kallsyms]", name), "kallsyms")
		}
	}
}

// checkCacheFile verifies one cache file. kallsyms files have no build-id
// note; perf filed them under the build-id of the kernel it copied them
// from, which is all the proof there is, and they are accepted only for
// kernel queries.
func (r *Resolver) checkCacheFile(s *search, path, role string) {
	const loc = "perf-cache"
	if role == "kallsyms" || (role == "elf" && s.q.Kind == dso.Kernel && !isELF(path)) {
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			s.tried = append(s.tried, loc+": "+path)
			return
		}
		if s.q.Kind != dso.Kernel {
			return
		}
		s.verified = append(s.verified, Candidate{Locator: loc, Path: path, Role: "kallsyms", Debug: DebugSymtab, Verified: "cache-key"})
		return
	}
	s.check(loc, role, path)
}

func isELF(path string) bool {
	f, err := OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	_, err = f.ReadAt(b[:], 0)
	return err == nil && string(b[:]) == "\x7fELF"
}

// buildIDPath is where dir files build-id hex: dir/.build-id/xx/rest, the
// layout of perf's cache (as a link or a directory) and of debug
// directories (with ".debug" appended for the debug file).
func buildIDPath(dir, hex string) string {
	return filepath.Join(dir, ".build-id", hex[:2], hex[2:])
}

// lookDebugDirs looks in each debug directory D for
// D/.build-id/xx/rest.debug (and D/.build-id/xx/rest, which Fedora links to
// the binary), D/<path>.debug, and the file named by the binary's
// .gnu_debuglink next to the binary, in its .debug/ subdirectory and under
// D/<dir of path>/ — gdb's search order ("Separate Debug Files" in the gdb
// manual) and perf's DSO_BINARY_TYPE__BUILDID_DEBUGINFO,
// __DEBUGLINK and __FEDORA_DEBUGINFO in tools/perf/util/dso.c.
func (r *Resolver) lookDebugDirs(_ context.Context, s *search) {
	const loc = "debug-dir"
	for _, d := range r.debugDirs {
		for _, name := range lookupNames(s.q.BuildID) {
			base := buildIDPath(d, name)
			s.check(loc, "debug", base+".debug")
			if s.q.Kind == dso.File || s.q.Kind == dso.Module {
				s.check(loc, "elf", base)
			}
		}
		if s.done() {
			return
		}
	}
	if s.q.Kind == dso.Kernel {
		r.lookKernelDebug(s)
		return
	}
	rec := cleanRecorded(s.q.Path)
	if rec == "" {
		return
	}
	for _, p := range r.pathDebugFiles(rec) {
		s.check(loc, "debug", p)
	}
	// .gnu_debuglink: read from the binary at the recorded path, whatever
	// its build-id (it may be a stripped twin); the linked file is then
	// verified on its own.
	bin := r.underSymFS(rec)
	id, err := ReadFileIdentity(bin)
	if err != nil || id.DebugLink == "" {
		return
	}
	for _, p := range r.debugLinkFiles(bin, rec, id.DebugLink) {
		s.check(loc, "debug", p)
	}
}

// pathDebugFiles are D/<rec>.debug for each debug directory D: the debug
// file of the binary recorded at rec (clean and absolute) filed by its
// path.
func (r *Resolver) pathDebugFiles(rec string) []string {
	var out []string
	for _, d := range r.debugDirs {
		out = append(out, filepath.Join(d, rec)+".debug")
	}
	return out
}

// debugLinkFiles are where gdb looks for the file a .gnu_debuglink names:
// next to the binary bin (the file on this host), in its .debug/
// subdirectory, and under each debug directory followed by the directory
// of rec, the binary's recorded (clean, absolute) path. A debuglink is a
// base name; anything else is not followed (nil).
func (r *Resolver) debugLinkFiles(bin, rec, link string) []string {
	if link != filepath.Base(link) || link == "." || link == ".." {
		return nil
	}
	dir := filepath.Dir(bin)
	out := []string{filepath.Join(dir, link), filepath.Join(dir, ".debug", link)}
	for _, d := range r.debugDirs {
		out = append(out, filepath.Join(d, filepath.Dir(rec), link))
	}
	return out
}

// DebugFile looks for the separate debug file of the binary at path (a
// file on this host; under SymFS when that is set) whose GNU build-id is
// id (nil when it has none) and whose .gnu_debuglink names link ("" when
// it has none), where Resolve's debug-directory step looks:
// D/.build-id/xx/rest.debug, D/<path>.debug, then link next to the binary,
// in its .debug/ subdirectory and under D/<dir of path>/, for each debug
// directory D. It returns the first file that exists and, when id is
// given, does not carry another build-id; the caller still checks the
// file, by its build-id or by the CRC the debuglink carries. When there is
// none the error wraps ErrNotFound and lists what was tried.
func (r *Resolver) DebugFile(path string, id buildid.ID, link string) (string, error) {
	var cands, tried []string
	if !id.IsZero() {
		for _, d := range r.debugDirs {
			for _, name := range lookupNames(id) {
				cands = append(cands, buildIDPath(d, name)+".debug")
			}
		}
	}
	bin, err := filepath.Abs(path)
	if err != nil {
		bin = filepath.Clean(path)
	}
	if rec := cleanRecorded(r.recordedPath(bin)); rec != "" {
		cands = append(cands, r.pathDebugFiles(rec)...)
		if link != "" {
			cands = append(cands, r.debugLinkFiles(bin, rec, link)...)
		}
	}
	for _, p := range cands {
		if p == bin {
			continue // a debuglink naming the binary itself
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && carriesID(p, id) {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("%s: separate debug file (tried %v): %w", path, tried, ErrNotFound)
}

// carriesID reports whether the file at p can be the debug file of a
// binary with build-id id: always when id is nil (the debuglink's CRC
// decides), else when p is an ELF file without a build-id (idem) or with
// id.
func carriesID(p string, id buildid.ID) bool {
	if id.IsZero() {
		return true
	}
	fid, err := ReadFileIdentity(p)
	return err == nil && (fid.BuildID == nil || fid.BuildID.Matches(id))
}

// recordedPath is the path a file on this host was recorded at: p with
// SymFS taken off its front (underSymFS undone), p itself without SymFS.
func (r *Resolver) recordedPath(p string) string {
	if r.symfs == "" {
		return p
	}
	root := filepath.Clean(r.symfs)
	if rel, err := filepath.Rel(root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return "/" + rel
	}
	return p
}

// lookKernelDebug tries the vmlinux files perf's vmlinux_path lists
// (tools/perf/util/symbol.c) for the running release; they verify only
// when the recording was made on this kernel.
func (r *Resolver) lookKernelDebug(s *search) {
	rel, ok := kernelRelease()
	if r.symfs != "" || !ok {
		return
	}
	for _, p := range []string{
		"/boot/vmlinux-" + rel,
		"/usr/lib/debug/boot/vmlinux-" + rel,
		"/lib/modules/" + rel + "/build/vmlinux",
		"/usr/lib/debug/lib/modules/" + rel + "/vmlinux",
	} {
		s.check("debug-dir", "debug", p)
	}
}

// cleanRecorded turns a recorded path into a clean absolute path, or ""
// for names that are not files ([vdso], [kernel.kallsyms], //anon,
// memfd:…, names with NUL bytes).
func cleanRecorded(p string) string {
	if p == "" || p[0] != '/' || strings.HasPrefix(p, "//") || strings.ContainsRune(p, 0) {
		return ""
	}
	return filepath.Clean(p)
}

// lookPath checks the recorded file itself (under SymFS; else on the
// host, then under /proc/PID/root while that process lives), and for the
// kernel and vDSO the running ones.
func (r *Resolver) lookPath(_ context.Context, s *search) {
	switch s.q.Kind {
	case dso.Kernel:
		if r.symfs != "" {
			return
		}
		r.kernOnce.Do(func() { r.kernID, _ = KernelBuildID() })
		if r.kernID.Matches(s.q.BuildID) {
			s.verified = append(s.verified, Candidate{Locator: "running-kernel", Path: "/proc/kallsyms", Role: "kallsyms", Debug: DebugSymtab, Verified: "build-id"})
		} else {
			s.tried = append(s.tried, "running-kernel: build-id "+r.kernID.String())
		}
		return
	case dso.VDSO:
		if r.symfs != "" {
			return
		}
		r.vdsoOnce.Do(func() { r.vdsoImg, r.vdsoID, _ = VDSO() })
		if r.vdsoID != nil && r.vdsoID.BuildID.Matches(s.q.BuildID) {
			s.verified = append(s.verified, Candidate{Locator: "running-vdso", Path: "[vdso]", Role: "vdso", Debug: r.vdsoID.Debug, Verified: "build-id", Image: r.vdsoImg})
		} else {
			s.tried = append(s.tried, "running-vdso")
		}
		return
	}
	for _, c := range r.pathCandidates(s.q.Path, s.q.PID) {
		if s.check(c.locator, "elf", c.path) {
			return
		}
	}
}
