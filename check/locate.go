package check

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/regfile"
)

// located is a binary (or symbol list) whose build-id matched the recorded
// one.
type located struct {
	Path     string     // the file that proved the identity (the first verified)
	Source   string     // which locator answered: perf-cache, debug-dir, debuginfod, path, proc-root, running-kernel, running-vdso
	BuildID  buildid.ID // the build-id the file has (equal to, or a zero-padded form of, the recorded one)
	SymPath  string     // the file to symbolize with (the richest verified one); "" = Path, unless Source is running-vdso
	Rejected []string   // candidates refused on the way, with reasons

	module *moduleImage // Path decompressed, when it is a compressed module
}

// moduleImage is a compressed module's decompressed bytes, the ones its
// build-id was verified on, handed once to the reader of its symbols
// (planModuleNames) so that the file is neither opened nor decompressed a
// second time, and released then: a located is kept with the lookup's
// memo for the whole check.
type moduleImage struct{ b atomic.Pointer[[]byte] }

func newModuleImage(b []byte) *moduleImage {
	if b == nil {
		return nil
	}
	m := &moduleImage{}
	m.b.Store(&b)
	return m
}

// take returns the image, once; nil after (or when there is none).
func (m *moduleImage) take() []byte {
	if m == nil {
		return nil
	}
	if p := m.b.Swap(nil); p != nil {
		return *p
	}
	return nil
}

// symbolFile is the file to symbolize with: SymPath, else Path, except for
// the running vdso, whose image judge writes out itself ("" then).
func (l *located) symbolFile() string {
	if l.SymPath != "" || l.Source == "running-vdso" {
		return l.SymPath
	}
	return l.Path
}

// A locator finds a binary by build-id. Each answer must have been
// verified (the file's build-id equals the recorded one) before it is
// returned; an error wrapping buildidcache.ErrNotFound means no lookup has
// it. resolverLocator is the one Analyze uses; tests put others in
// Options.locator.
type locator interface {
	Locate(ctx context.Context, q query) (*located, error)
}

// query is what a locator is asked.
type query struct {
	Path    string // the recorded path (perf's name for kernel and vdso: "[kernel.kallsyms]", "[vdso]")
	Kind    dso.Kind
	BuildID buildid.ID
	PID     int // a process that mapped it (for /proc/PID/root lookups), 0 if none
}

// fileState is what the file at a path looks like now.
type fileState struct {
	Path      string
	Exists    bool
	StatErr   error
	Maj, Min  uint32
	Ino       uint64
	MTime     time.Time
	BuildID   buildid.ID // nil when it has none (or is not ELF)
	GoBuildID string
	IsELF     bool
	// Compression is "xz", "zstd" or "gzip" when the file is a
	// compressed ELF file, which only a kernel module may be.
	Compression string
	IdentErr    error
}

// stateCache reads each path's state once.
type stateCache struct {
	mu sync.Mutex
	m  map[string]*fileState
}

func (c *stateCache) get(p string) *fileState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*fileState)
	}
	if s, ok := c.m[p]; ok {
		return s
	}
	s := statFile(p)
	c.m[p] = s
	return s
}

func statFile(p string) *fileState {
	s := &fileState{Path: p}
	st, err := os.Stat(p)
	if err != nil {
		s.StatErr = err
		return s
	}
	s.Exists = true
	s.MTime = st.ModTime()
	if id, ok := buildidcache.FileIDOf(st); ok {
		// Decoded as MMAP2's maj/min (the kernel's MAJOR()/MINOR() of
		// st_dev), so that they compare with the recorded ones.
		s.Maj, s.Min, s.Ino = id.Maj, id.Min, id.Ino
	}
	if !st.Mode().IsRegular() {
		return s
	}
	ident, err := buildidcache.ReadFileIdentity(p)
	if err != nil {
		s.IdentErr = err
		s.Compression = compressionAt(p)
		return s
	}
	s.IsELF = true
	s.Compression = ident.Compression
	if len(ident.BuildID) > 0 {
		s.BuildID = ident.BuildID
	}
	s.GoBuildID = ident.GoBuildID
	return s
}

// compressionAt names the compression of the file at p by its first
// bytes, "" when it has none or cannot be read: a compressed file whose
// identity cannot be read is still not the ELF file a process maps.
func compressionAt(p string) string {
	f, err := regfile.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	var magic [6]byte
	n, _ := f.ReadAt(magic[:], 0)
	return buildidcache.Compression(magic[:n])
}
