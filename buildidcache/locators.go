package buildidcache

import (
	"context"
	"os"
	"path/filepath"
	"strings"

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
		link := filepath.Join(r.buildIDDir, ".build-id", name[:2], name[2:])
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
			base := filepath.Join(d, ".build-id", name[:2], name[2:])
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
	for _, d := range r.debugDirs {
		s.check(loc, "debug", filepath.Join(d, rec)+".debug")
	}
	// .gnu_debuglink: read from the binary at the recorded path, whatever
	// its build-id (it may be a stripped twin); the linked file is then
	// verified on its own.
	bin := r.underSymFS(rec)
	id, err := ReadFileIdentity(bin)
	if err != nil || id.DebugLink == "" {
		return
	}
	link := id.DebugLink
	if link != filepath.Base(link) || link == "." || link == ".." {
		return // a debuglink is a base name; anything else is not followed
	}
	dir := filepath.Dir(bin)
	s.check(loc, "debug", filepath.Join(dir, link))
	s.check(loc, "debug", filepath.Join(dir, ".debug", link))
	for _, d := range r.debugDirs {
		s.check(loc, "debug", filepath.Join(d, filepath.Dir(rec), link))
	}
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
