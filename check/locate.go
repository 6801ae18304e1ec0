package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
)

// Located is a binary (or symbol list) whose build-id matched the recorded
// one.
type Located struct {
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
// second time, and released then: a Located is kept with the lookup's
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
func (l *Located) symbolFile() string {
	if l.SymPath != "" || l.Source == "running-vdso" {
		return l.SymPath
	}
	return l.Path
}

// A Locator finds a binary by build-id. Each answer must have been verified
// (the file's build-id equals id) before it is returned; an error wrapping
// buildidcache.ErrNotFound means no locator has it. The buildidcache package's Resolver
// is the full implementation (perf cache, debug dirs, debuginfod, path);
// PathLocator is a minimal one.
type Locator interface {
	Locate(ctx context.Context, q Query) (*Located, error)
}

// Query is what a Locator is asked.
type Query struct {
	Path    string // the recorded path (perf's name for kernel and vdso: "[kernel.kallsyms]", "[vdso]")
	Kind    dso.Kind
	BuildID buildid.ID
	PID     int // a process that mapped it (for /proc/PID/root lookups), 0 if none
}

// PathLocator is a minimal Locator: perf's build-id cache in BuildIDDir
// (read by buildidcache.Cache.Resolve, the one reader of perf's layout),
// then the recorded path under SymFS, then, for the kernel and the vdso,
// the running ones.
type PathLocator struct {
	BuildIDDir string // "" = no cache
	SymFS      string // a root prefixed to recorded paths, as perf's --symfs
}

// Locate implements Locator.
func (l *PathLocator) Locate(ctx context.Context, q Query) (*Located, error) {
	if len(q.BuildID) == 0 || q.BuildID.IsZero() {
		return nil, fmt.Errorf("%s: no build-id to look for: %w", q.Path, buildidcache.ErrNotFound)
	}
	var tried []string
	if l.BuildIDDir != "" {
		c := &buildidcache.Cache{Dir: l.BuildIDDir}
		res, err := c.Resolve(lookupQuery(q))
		if err == nil {
			return located(res), nil
		}
		if nf := (*buildidcache.NotFoundError)(nil); errors.As(err, &nf) {
			tried = append(tried, nf.Tried...)
			for _, r := range nf.Rejected {
				tried = append(tried, r.Locator+": "+r.Path)
			}
		}
	}
	switch {
	case (q.Kind == dso.Kernel || q.Kind == dso.VDSO) && l.SymFS != "":
		// Under --symfs the recording comes from elsewhere: this host's
		// kernel and vdso are not candidates.
	case q.Kind == dso.Kernel:
		if id, err := buildidcache.KernelBuildID(); err == nil && id.Matches(q.BuildID) {
			return &Located{Path: "/proc/kallsyms", Source: "running-kernel", BuildID: id}, nil
		}
		tried = append(tried, "/sys/kernel/notes")
	case q.Kind == dso.VDSO:
		if _, ident, err := buildidcache.VDSO(); err == nil && ident.BuildID.Matches(q.BuildID) {
			return &Located{Path: "[vdso]", Source: "running-vdso", BuildID: ident.BuildID}, nil
		}
		tried = append(tried, "running vdso")
	default:
		p := q.Path
		if l.SymFS != "" {
			p = filepath.Join(l.SymFS, filepath.Clean("/"+q.Path))
		}
		if ok, img, _ := fileHasBuildID(p, q.Kind, q.BuildID); ok {
			return &Located{Path: p, Source: "path", BuildID: q.BuildID, module: newModuleImage(img)}, nil
		}
		tried = append(tried, p)
	}
	return nil, fmt.Errorf("%s %s: tried %s: %w", q.Path, q.BuildID, strings.Join(tried, ", "), buildidcache.ErrNotFound)
}

// fileHasBuildID reports whether the file at p carries id. A kallsyms file
// has no build-id of its own: perf files it under the kernel's, so its
// place in the cache is the proof. For a compressed module it also
// returns the decompressed image the build-id was read from
// (buildidcache.ReadModuleIdentity).
func fileHasBuildID(p string, k dso.Kind, id buildid.ID) (bool, []byte, error) {
	switch k {
	case dso.Kernel:
		st, err := os.Stat(p)
		return err == nil && st.Mode().IsRegular(), nil, err
	case dso.Module:
		ident, img, err := buildidcache.ReadModuleIdentity(p)
		if err != nil || !ident.BuildID.Matches(id) {
			return false, nil, err
		}
		return true, img, nil
	}
	ident, err := buildidcache.ReadFileIdentity(p)
	if err != nil {
		return false, nil, err
	}
	return ident.BuildID.Matches(id), nil, nil
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
	IdentErr  error
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
		return s
	}
	s.IsELF = true
	if len(ident.BuildID) > 0 {
		s.BuildID = ident.BuildID
	}
	s.GoBuildID = ident.GoBuildID
	return s
}
