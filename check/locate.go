package check

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/regfile"
)

// A locator finds a binary by build-id and answers as
// buildidcache.Resolver.Resolve does: each verified candidate's build-id
// equals the recorded one, and an error wrapping buildidcache.ErrNotFound
// means no lookup has it. resolverLocator is the one Analyze uses; tests
// put others in Options.locator.
type locator interface {
	Locate(ctx context.Context, q buildidcache.Query) (*buildidcache.Result, error)
}

// symbolFile is the file to symbolize res's binary with: the verified
// candidate with the most debug information, unless that is the running
// vdso, which lives in memory only; then the first verified file, or ""
// when there is none (judge writes the vdso's image out itself).
func symbolFile(res *buildidcache.Result) string {
	if res.Best.Image == nil && res.Best.Locator != "running-vdso" {
		return res.Best.Path
	}
	for _, c := range res.Verified {
		if c.Image == nil && c.Locator != "running-vdso" {
			return c.Path
		}
	}
	return ""
}

// debuginfodServers reports whether the lookup asks debuginfod servers,
// so that advice does not say to set what is set.
func (o *Options) debuginfodServers() bool {
	if o.debugFiles != nil {
		return len(o.debugFiles.DebuginfodURLs()) > 0
	}
	urls := o.Lookup.DebuginfodURLs
	if urls == nil {
		urls = buildidcache.DebuginfodURLsFromEnv()
	}
	return len(urls) > 0
}

// rejectedOf is res's refused candidates as a DSO reports them.
func rejectedOf(res *buildidcache.Result) []string { return candidateReasons(res.Rejected) }

// candidateReasons is refused candidates as a DSO reports them.
func candidateReasons(cs []buildidcache.Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Locator+" "+c.Path+": "+c.Reason())
	}
	return out
}

// debuginfodSaid is what the debuginfod lookup of err, a failed lookup,
// answered, for a DSO's reason: each file it refused and each server's
// answer (not found, a timeout, an HTTP error), or, when no server was
// asked, why (a remembered miss, the deadline); "" when debuginfod was
// not consulted. A refused file and a timeout must not both read as
// "not found".
func debuginfodSaid(err error) string {
	var nf *buildidcache.NotFoundError
	if !errors.As(err, &nf) {
		return ""
	}
	var said, other []string
	for _, c := range nf.Rejected {
		if c.Locator == "debuginfod" {
			said = append(said, "refused a wrong file: "+c.Reason())
		}
	}
	failed := map[string]bool{} // servers whose failure is said already
	for _, t := range nf.Tried {
		t, ok := strings.CutPrefix(t, "debuginfod ")
		switch {
		case !ok:
		case strings.HasPrefix(t, "http://"), strings.HasPrefix(t, "https://"):
			url, what, _ := strings.Cut(t, ": ")
			if strings.HasPrefix(what, "skipped, failed earlier") && failed[url] {
				continue
			}
			failed[url] = true
			said = append(said, t)
		default:
			other = append(other, t)
		}
	}
	if len(said) == 0 {
		said = other
	}
	return strings.Join(said, "; ")
}

// takeModule returns the decompressed image of a compressed module that
// res's identity was verified on, once, and drops it from res: the
// lookup's memo keeps res for the whole check, and the image is needed
// only to read the module's symbols (planModuleNames), so that the file
// is neither opened nor decompressed a second time. mu guards res, which
// the memo may hand to several goroutines.
func takeModule(mu *sync.Mutex, res *buildidcache.Result) []byte {
	mu.Lock()
	defer mu.Unlock()
	img := res.Identity.Module
	res.Identity.Module, res.Best.Module = nil, nil
	for i := range res.Verified {
		res.Verified[i].Module = nil
	}
	return img
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
