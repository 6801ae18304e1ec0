package buildidcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
)

// Query asks for the file with one build-id.
type Query struct {
	// BuildID is required; it may be zero-padded to 20 bytes as older
	// perf writes it (see buildid.ID.Matches).
	BuildID buildid.ID
	// Path is the recorded file name (from perf.data; untrusted). It
	// serves the path-based lookups: <debug-dir>/<Path>.debug,
	// .gnu_debuglink and the recorded file itself.
	Path string
	// Kind says how the binary is cached and found: dso.File (the zero
	// value), dso.Kernel, dso.Module or dso.VDSO; the other kinds have no
	// binary to look up.
	Kind dso.Kind
	// PID, when positive and the process still lives, adds a lookup under
	// /proc/PID/root, which sees the process's mount namespace
	// (containers), after the recorded path on this host: a file there
	// answers only when the host's does not verify. Set it only for a
	// recording made on this host since it last booted: a pid from
	// another host or an earlier boot names an unrelated process or none,
	// and the lookup and its trail would depend on what runs where the
	// recording is read (the check's rule is in docs/buildidcache.md).
	PID int
	// IdentityOnly stops at the first verified file and downloads no
	// debuginfo: for callers that need to know which binary ran, not to
	// symbolize it.
	IdentityOnly bool
}

// Candidate is one file a locator found.
type Candidate struct {
	// Locator names the lookup that produced it: "perf-cache",
	// "debug-dir", "debuginfod", "path", "proc-root", "running-kernel",
	// "running-vdso".
	Locator string `json:"locator"`
	// Path is the file. For "running-vdso" it is "[vdso]" and Image holds
	// the bytes.
	Path string `json:"path"`
	// Role says what the file is: "elf" (the binary), "debug" (separate
	// debuginfo), "kallsyms", "vdso", "executable" or "debuginfo" (as
	// debuginfod names them).
	Role string `json:"role"`
	// URL is the debuginfod server that served the file.
	URL string `json:"url,omitempty"`
	// Debug is the richest symbol information the file holds.
	Debug DebugLevel `json:"debug"`
	// Verified tells how the file was checked: "build-id" when its note
	// matched, "cache-key" for a kallsyms file, which has no note and is
	// trusted because perf filed it under the build-id it had read from
	// the running kernel.
	Verified string `json:"verified,omitempty"`
	// Compression is "xz", "zstd" or "gzip" for a compressed module, which
	// a symbolizer must decompress first.
	Compression string `json:"compression,omitempty"`
	// Err says why a rejected candidate was refused (wraps ErrMismatch
	// when the build-id differs).
	Err error `json:"-"`
	// Image is the in-memory file for the running vDSO.
	Image []byte `json:"-"`
	// Module is the decompressed image of a compressed kernel module
	// (dso.Module queries), the bytes its build-id was read from: read
	// its symbols from them instead of decompressing Path again. nil
	// otherwise.
	Module []byte `json:"-"`
}

// Reason is Err as text, for reports.
func (c Candidate) Reason() string {
	if c.Err == nil {
		return ""
	}
	return c.Err.Error()
}

// MarshalJSON adds Err as "reason" and leaves out the vDSO image.
func (c Candidate) MarshalJSON() ([]byte, error) {
	type plain Candidate // without methods, so no recursion
	return json.Marshal(struct {
		plain
		Reason string `json:"reason,omitempty"`
	}{plain(c), c.Reason()})
}

// Result is a successful lookup.
type Result struct {
	BuildID buildid.ID
	// Identity is the first verified candidate in lookup order: it proves
	// which binary ran.
	Identity Candidate
	// Best is the verified candidate with the most debug information
	// (DWARF > .symtab > .dynsym), the one to symbolize with; the first
	// such in lookup order on a tie.
	Best Candidate
	// Verified lists every verified candidate in lookup order.
	Verified []Candidate
	// Rejected lists files that were found but refused, with reasons.
	Rejected []Candidate
	// Tried lists the lookups that found nothing, as "locator: what".
	Tried []string
}

// NotFoundError is returned when no candidate verified. It wraps
// ErrNotFound and lists what was tried and what was rejected.
type NotFoundError struct {
	BuildID  buildid.ID
	Path     string
	Tried    []string
	Rejected []Candidate
}

func (e *NotFoundError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "build-id %v", e.BuildID)
	if e.Path != "" {
		fmt.Fprintf(&sb, " (%s)", e.Path)
	}
	sb.WriteString(": ")
	sb.WriteString(ErrNotFound.Error())
	for _, c := range e.Rejected {
		fmt.Fprintf(&sb, "; rejected %s %s: %v", c.Locator, c.Path, c.Err)
	}
	if len(e.Tried) > 0 {
		sb.WriteString("; tried ")
		sb.WriteString(strings.Join(e.Tried, ", "))
	}
	return sb.String()
}

func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// Options configure a Resolver. The zero value looks where perf and
// elfutils look by default.
type Options struct {
	// BuildIDDir is perf's cache; "" means DefaultBuildIDDir(). "-"
	// disables the perf-cache lookup.
	BuildIDDir string
	// DebugDirs are searched in order; nil means /usr/lib/debug (under
	// SymFS when that is set). An empty non-nil slice disables them.
	DebugDirs []string
	// SymFS is prefixed to every recorded path, as perf's --symfs, for
	// recordings from containers or other hosts. The running kernel and
	// vDSO are then not consulted: they belong to this host.
	SymFS string
	// DebuginfodURLs are the servers; nil means $DEBUGINFOD_URLS. With
	// none, no network access happens.
	DebuginfodURLs []string
	// DebuginfodCache is elfutils' client cache; "" means
	// DefaultDebuginfodCache().
	DebuginfodCache string
	// DebuginfodTimeout is elfutils' progress rule: from the request on,
	// every span of this length must bring 100 KiB or the rest of the
	// file; it also bounds connecting and waiting for the response. 0
	// means $DEBUGINFOD_TIMEOUT seconds, else 10 s.
	DebuginfodTimeout time.Duration
	// DebuginfodDeadline is one budget for the whole Resolver: once it
	// has passed since the first download began, no new download starts
	// and those in progress are cut. 0 means DebuginfodMaxTime's value
	// but at least 30 s, and none when that is none; negative means
	// none.
	DebuginfodDeadline time.Duration
	// DebuginfodMaxTime bounds each download from its request to its
	// last byte; 0 means $DEBUGINFOD_MAXTIME seconds (0 there: none),
	// else 30 s; negative means none.
	DebuginfodMaxTime time.Duration
	// DebuginfodMaxSize rejects larger downloads, of both types; 0 means
	// $DEBUGINFOD_MAXSIZE bytes (0 there: none), else 1 GiB for an
	// executable and 4 GiB for debuginfo; negative means none.
	DebuginfodMaxSize int64
	// HTTPClient, when set, replaces the default client (tests).
	HTTPClient *http.Client
	// Progress receives download progress lines; nil means none. The
	// command sets it to stderr only when stderr is a terminal.
	Progress io.Writer
}

// Resolver finds files by build-id. It is safe for concurrent use; each
// debuginfod download happens once per build-id however many goroutines
// ask.
type Resolver struct {
	buildIDDir string
	debugDirs  []string
	symfs      string
	dl         *debuginfod // nil without servers and without a cache

	vdsoOnce sync.Once
	vdsoImg  []byte
	vdsoID   *Identity
	kernOnce sync.Once
	kernID   buildid.ID
}

// New returns a Resolver configured by opts.
func New(opts Options) *Resolver {
	r := &Resolver{symfs: opts.SymFS}
	switch opts.BuildIDDir {
	case "":
		r.buildIDDir = DefaultBuildIDDir()
	case "-":
	default:
		r.buildIDDir = opts.BuildIDDir
	}
	if opts.DebugDirs == nil {
		r.debugDirs = []string{r.underSymFS("/usr/lib/debug")}
	} else {
		r.debugDirs = append([]string(nil), opts.DebugDirs...)
	}
	r.dl = newDebuginfod(opts)
	return r
}

// Close removes the files the Resolver downloaded when it had no
// debuginfod cache directory to keep them in (see Options.DebuginfodCache);
// paths it returned there are gone afterwards. It is a no-op otherwise.
func (r *Resolver) Close() error {
	if r.dl == nil {
		return nil
	}
	return r.dl.close()
}

// SymFS is the root recorded paths are looked up under (Options.SymFS);
// "" when they are looked up as they are.
func (r *Resolver) SymFS() string { return r.symfs }

// DebuginfodURLs are the http and https servers the Resolver asks
// (Options.DebuginfodURLs, else $DEBUGINFOD_URLS); none when it asks no
// server.
func (r *Resolver) DebuginfodURLs() []string {
	if r.dl == nil {
		return nil
	}
	return append([]string(nil), r.dl.urls...)
}

// underSymFS maps a recorded absolute path into SymFS. The path is cleaned
// as if rooted, so ".." cannot climb out of SymFS.
func (r *Resolver) underSymFS(p string) string {
	clean := filepath.Clean("/" + p)
	if r.symfs == "" {
		return clean
	}
	return filepath.Join(r.symfs, clean)
}

// search collects what one Resolve finds.
type search struct {
	q        *Query
	verified []Candidate
	rejected []Candidate
	tried    []string
}

func (s *search) best() DebugLevel {
	l := DebugLevel(-1)
	for _, c := range s.verified {
		l = max(l, c.Debug)
	}
	return l
}

// done reports whether looking further cannot improve the answer: with
// DWARF in hand, the local lookups still go on until a file with code
// verifies, because a separate debug file (the first to verify in a debug
// directory) has none, and a caller that disassembles or reads a
// pclntab needs the executable too. No download is made for that.
func (s *search) done() bool {
	if len(s.verified) == 0 {
		return false
	}
	return s.q.IdentityOnly || (s.best() == DebugDWARF && s.hasCode())
}

// hasCode reports whether a verified candidate is an executable image
// rather than separate debuginfo.
func (s *search) hasCode() bool {
	for _, c := range s.verified {
		if c.Role != "debug" && c.Role != "debuginfo" {
			return true
		}
	}
	return false
}

// check verifies the ELF file at path against the query and files it as
// verified, rejected or tried. It reports whether it verified.
func (s *search) check(locator, role, path string) bool {
	var id *Identity
	var module []byte
	var err error
	if s.q.Kind == dso.Module {
		// Decompressed once, kept for the symbols (ReadModuleIdentity).
		id, module, err = ReadModuleIdentity(path)
	} else {
		id, err = ReadFileIdentity(path)
	}
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, ErrNotELF) && isDir(path):
		s.tried = append(s.tried, locator+": "+path)
		return false
	case err != nil:
		s.rejected = append(s.rejected, Candidate{Locator: locator, Path: path, Role: role, Err: err})
		return false
	case id.Compression != "" && s.q.Kind != dso.Module:
		// Only kernel modules are loaded from compressed files; a
		// process maps the ELF file itself.
		s.rejected = append(s.rejected, Candidate{Locator: locator, Path: path, Role: role,
			Err: fmt.Errorf("%s: %w: a %s-compressed file, which only a kernel module can be", path, ErrNotELF, id.Compression)})
		return false
	case id.BuildID == nil:
		s.rejected = append(s.rejected, Candidate{Locator: locator, Path: path, Role: role,
			Err: fmt.Errorf("%s: %w", path, ErrNoBuildID)})
		return false
	case !id.BuildID.Matches(s.q.BuildID):
		s.rejected = append(s.rejected, Candidate{Locator: locator, Path: path, Role: role,
			Err: fmt.Errorf("%w: %s has %v", ErrMismatch, path, id.BuildID)})
		return false
	}
	for _, c := range s.verified {
		if c.Path == path {
			return true // the same file reached twice
		}
	}
	s.verified = append(s.verified, Candidate{Locator: locator, Path: path, Role: role, Debug: id.Debug, Verified: "build-id", Compression: id.Compression, Module: module})
	return true
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Resolve looks for the file with q.BuildID: in perf's cache, the debug
// directories, debuginfod (debuginfo), the recorded path and finally
// debuginfod's /executable. It stops early once a verified file has DWARF
// (or, with IdentityOnly, at the first verified file). When nothing
// verifies it returns a *NotFoundError.
func (r *Resolver) Resolve(ctx context.Context, q Query) (*Result, error) {
	return r.resolve(ctx, q,
		r.lookPerfCache,
		r.lookDebugDirs,
		r.lookDebuginfodDebuginfo,
		r.lookPath,
		r.lookDebuginfodExecutable,
	)
}

// resolve runs the lookup steps in order until the answer cannot improve.
func (r *Resolver) resolve(ctx context.Context, q Query, steps ...func(context.Context, *search)) (*Result, error) {
	if q.BuildID.IsZero() {
		return nil, fmt.Errorf("resolve %q: %w", q.Path, ErrNoBuildID)
	}
	s := &search{q: &q}
	for _, step := range steps {
		if s.done() || ctx.Err() != nil {
			break
		}
		step(ctx, s)
	}
	if len(s.verified) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("resolve %v: %w", q.BuildID, err)
		}
		return nil, &NotFoundError{BuildID: q.BuildID, Path: q.Path, Tried: s.tried, Rejected: s.rejected}
	}
	res := &Result{BuildID: q.BuildID, Identity: s.verified[0], Best: s.verified[0],
		Verified: s.verified, Rejected: s.rejected, Tried: s.tried}
	for _, c := range s.verified[1:] {
		if c.Debug > res.Best.Debug {
			res.Best = c
		}
	}
	return res, nil
}

// LocalPaths returns the existing files a recorded path may name on this
// host: under SymFS, or else the path itself, then (pid > 0, with
// Query.PID's rule) the path under /proc/PID/root while the process
// lives. The host's file comes
// first: a file under another process's root is that process's owner's
// to write, build-id note included. It verifies nothing: it is for
// mappings without a build-id, whose identity must come from other
// evidence (device, inode, mtime).
func (r *Resolver) LocalPaths(path string, pid int) []string {
	var out []string
	for _, p := range r.pathCandidates(path, pid) {
		if st, err := os.Stat(p.path); err == nil && st.Mode().IsRegular() {
			out = append(out, p.path)
		}
	}
	return out
}

type pathCand struct{ locator, path string }

func (r *Resolver) pathCandidates(path string, pid int) []pathCand {
	if path == "" || strings.HasPrefix(path, "[") || strings.ContainsRune(path, 0) {
		return nil
	}
	if r.symfs != "" {
		return []pathCand{{"path", r.underSymFS(path)}}
	}
	// The host's file first, then the process's view (a container's
	// root): what another process's root holds is only as trustworthy as
	// that process's owner, so it answers only when the host has no file
	// with the build-id.
	out := []pathCand{{"path", filepath.Clean("/" + path)}}
	if pid > 0 {
		root := "/proc/" + strconv.Itoa(pid) + "/root"
		if _, err := os.Stat(root); err == nil {
			out = append(out, pathCand{"proc-root", root + filepath.Clean("/"+path)})
		}
	}
	return out
}
