package buildidcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
	"golang.org/x/sync/singleflight"
)

// Defaults where this package departs from elfutils on purpose (see
// docs/buildidcache.md): elfutils waits 90 s per server and request for
// 100 KiB, which an unreachable server in $DEBUGINFOD_URLS turns into
// minutes per profile, and sets no limit on a download's size or time
// unless $DEBUGINFOD_MAXSIZE and $DEBUGINFOD_MAXTIME are set, which lets a
// server fill the disk or hold the run for ever. A run on hostile input
// must end within 30 s (docs/limits.md): a download may take that long,
// and so may all of a Resolver's downloads together.
const (
	defaultDebuginfodTimeout = 10 * time.Second
	defaultDebuginfodMaxTime = 30 * time.Second
	defaultCacheMiss         = 600 * time.Second // elfutils' cache_miss_s default
	// Size caps by type, replaced by $DEBUGINFOD_MAXSIZE: the largest
	// real executables and shared libraries are a few hundred megabytes,
	// their debuginfo a few times that.
	defaultMaxExecutable = 1 << 30
	defaultMaxDebuginfo  = 4 << 30
	// minProgress is elfutils' progress rule: a server that does not send
	// this much within DEBUGINFOD_TIMEOUT (or the rest of the file) is
	// given up on.
	minProgress = 100 << 10
)

// debuginfod is the client: elfutils' protocol (GET <url>/buildid/<hex>/
// executable|debuginfo) and elfutils' cache layout
// (<cache>/<hex>/executable|debuginfo, an empty file for a remembered miss),
// so that gdb, perf and this package share downloads.
type debuginfod struct {
	urls     []string
	cache    string
	timeout  time.Duration
	deadline time.Duration // for all downloads, from the first; negative: none
	maxTime  time.Duration // per download; negative: none
	maxSize  int64         // 0: the defaults by type; negative: none
	client   *http.Client
	progress io.Writer

	flight singleflight.Group

	mu      sync.Mutex
	started time.Time        // first request; the deadline counts from here
	down    map[string]error // servers that failed for a network reason
	scratch string           // without a cache: this Resolver's download directory
	closed  bool
}

// scratchDir returns the directory downloads go to when there is no
// cache (no $HOME, $XDG_CACHE_HOME or $DEBUGINFOD_CACHE_PATH): one per
// Resolver, made on first use and removed by Close, so that files stay
// for the symbolizer as long as the Resolver lives and no run leaves one
// directory per download behind.
func (d *debuginfod) scratchDir() (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return "", errors.New("debuginfod: resolver closed")
	}
	if d.scratch == "" {
		dir, err := os.MkdirTemp("", "perfcheck-debuginfod-")
		if err != nil {
			return "", err
		}
		d.scratch = dir
	}
	return d.scratch, nil
}

func (d *debuginfod) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.scratch == "" {
		return nil
	}
	err := os.RemoveAll(d.scratch)
	d.scratch = ""
	return err
}

// fetchResult is shared by all goroutines that asked for the same file.
type fetchResult struct {
	path     string
	url      string
	rejected []Candidate
	tried    []string
}

func newDebuginfod(opts Options) *debuginfod {
	urls := opts.DebuginfodURLs
	if urls == nil {
		urls = DebuginfodURLsFromEnv()
	}
	cache := opts.DebuginfodCache
	if cache == "" {
		cache = DefaultDebuginfodCache()
	}
	if len(urls) == 0 && cache == "" {
		return nil
	}
	d := &debuginfod{cache: cache, timeout: opts.DebuginfodTimeout, deadline: opts.DebuginfodDeadline,
		maxTime: opts.DebuginfodMaxTime, maxSize: opts.DebuginfodMaxSize, client: opts.HTTPClient,
		progress: opts.Progress, down: map[string]error{}}
	for _, u := range urls {
		// Only http and https servers are asked. elfutils 0.190 also
		// accepts policy words between URLs ("ima:enforcing") and curl's
		// other schemes; those are skipped, not treated as dead servers.
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			continue
		}
		if u = strings.TrimRight(u, "/"); u != "" {
			d.urls = append(d.urls, u)
		}
	}
	if d.timeout == 0 {
		d.timeout = defaultDebuginfodTimeout
		if s, err := strconv.Atoi(os.Getenv("DEBUGINFOD_TIMEOUT")); err == nil && s > 0 {
			d.timeout = time.Duration(s) * time.Second
		}
	}
	if d.maxTime == 0 {
		// elfutils: whole seconds, 0 for no limit.
		d.maxTime = defaultDebuginfodMaxTime
		if s, err := strconv.Atoi(os.Getenv("DEBUGINFOD_MAXTIME")); err == nil && s >= 0 {
			d.maxTime = time.Duration(s) * time.Second
			if s == 0 {
				d.maxTime = -1
			}
		}
	}
	if d.deadline == 0 {
		// As long as one download may take, and no shorter than the
		// default: a user who allows a download more time allows the
		// run more, and one who allows it less still wants the other
		// binaries looked up.
		d.deadline = max(d.maxTime, defaultDebuginfodMaxTime)
		if d.maxTime < 0 {
			d.deadline = -1
		}
	}
	if d.maxSize == 0 {
		// elfutils: bytes, 0 for no limit.
		if n, err := strconv.ParseInt(os.Getenv("DEBUGINFOD_MAXSIZE"), 10, 64); err == nil && n >= 0 {
			d.maxSize = n
			if n == 0 {
				d.maxSize = -1
			}
		}
	}
	if d.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: d.timeout}).DialContext
		tr.ResponseHeaderTimeout = d.timeout
		tr.TLSHandshakeTimeout = d.timeout
		// Go's transport asks for gzip on its own and inflates the body
		// out of sight of every size check; see get.
		tr.DisableCompression = true
		d.client = &http.Client{Transport: tr}
	}
	return d
}

// limit is the largest file of type typ that is downloaded, 0 for none.
func (d *debuginfod) limit(typ string) int64 {
	switch {
	case d.maxSize > 0:
		return d.maxSize
	case d.maxSize < 0:
		return 0
	case typ == "debuginfo":
		return defaultMaxDebuginfo
	}
	return defaultMaxExecutable
}

func (r *Resolver) lookDebuginfodDebuginfo(ctx context.Context, s *search) {
	if s.q.IdentityOnly || s.best() >= DebugDWARF || s.q.Kind == dso.VDSO {
		return
	}
	// A kernel's debuginfo is a vmlinux of hundreds of megabytes; when a
	// kallsyms or vmlinux already verified, function names are there and
	// the download is not worth it by default.
	if s.q.Kind == dso.Kernel && len(s.verified) > 0 {
		return
	}
	r.lookDebuginfod(ctx, s, "debuginfo")
}

func (r *Resolver) lookDebuginfodExecutable(ctx context.Context, s *search) {
	if len(s.verified) > 0 || s.q.Kind == dso.Kernel {
		return
	}
	r.lookDebuginfod(ctx, s, "executable")
}

func (r *Resolver) lookDebuginfod(ctx context.Context, s *search, typ string) {
	if r.dl == nil {
		return
	}
	res, err := r.dl.fetch(ctx, s.q.BuildID, typ)
	s.rejected = append(s.rejected, res.rejected...)
	s.tried = append(s.tried, res.tried...)
	if err != nil {
		s.tried = append(s.tried, fmt.Sprintf("debuginfod %s: %v", typ, err))
		return
	}
	// The file was verified when it was downloaded; it is checked again
	// here because a cached copy may predate us (or come from elsewhere).
	n := len(s.verified)
	if s.check("debuginfod", typ, res.path) && len(s.verified) > n {
		s.verified[len(s.verified)-1].URL = res.url
	}
}

// fetch returns the cached or downloaded file of type typ for bid.
//
// Every file operation in the cache goes through an os.Root opened on it,
// as the build-id cache's writes do: <cache>/<build-id> is whatever the
// cache's owner (or anyone who could write there) left, and a symlink
// there must not lead a removal or a download outside the cache.
func (d *debuginfod) fetch(ctx context.Context, bid buildid.ID, typ string) (fetchResult, error) {
	hexID := bid.String()
	if d.cache == "" && len(d.urls) == 0 {
		return fetchResult{}, fmt.Errorf("%w: no debuginfod URL configured", ErrNotFound)
	}
	cache := d.cache
	if cache == "" {
		dir, err := d.scratchDir()
		if err != nil {
			return fetchResult{}, err
		}
		cache = dir
	}
	if len(d.urls) > 0 {
		if err := os.MkdirAll(cache, 0o700); err != nil {
			return fetchResult{}, fmt.Errorf("debuginfod cache: %w", err)
		}
	}
	root, err := os.OpenRoot(cache)
	if errors.Is(err, fs.ErrNotExist) {
		return fetchResult{}, fmt.Errorf("%w: no debuginfod URL configured", ErrNotFound)
	} else if err != nil {
		return fetchResult{}, fmt.Errorf("debuginfod cache: %w", err)
	}
	defer root.Close()
	c := clientCache{root: root, dir: cache}
	rel := hexID + "/" + typ
	res, ok, err := d.cached(c, rel, bid, typ)
	if ok {
		return res, err
	}
	set := res // a wrong cached file set aside
	if len(d.urls) == 0 {
		return set, fmt.Errorf("%w: no debuginfod URL configured", ErrNotFound)
	}
	v, err, _ := d.flight.Do(rel, func() (any, error) {
		// A download that finished between our cache check and this
		// call has left its file: look again before asking a server.
		res, ok, err := d.cached(c, rel, bid, typ)
		if ok {
			return res, err
		}
		set := res // set aside by this call, reported with the download
		// The download serves every goroutine waiting on it, so it must not
		// die with the first caller's context; its own limits bound it.
		res, err = d.download(context.WithoutCancel(ctx), c, bid, typ, rel)
		res.rejected = append(set.rejected, res.rejected...)
		return res, err
	})
	res, _ = v.(fetchResult)
	res.rejected = append(set.rejected, res.rejected...)
	return res, err
}

// clientCache is elfutils' client cache, every access through root.
type clientCache struct {
	root *os.Root
	dir  string // root's name, for messages and returned paths
}

func (c clientCache) path(rel string) string { return filepath.Join(c.dir, filepath.FromSlash(rel)) }

// unsafe explains a failed operation on rel: ErrUnsafePath when a
// symlink would have led it outside the cache.
func (c clientCache) unsafe(err error, rel string) error {
	return fmt.Errorf("debuginfod cache: %w", escapeErr(c.root, c.dir, err, rel))
}

// cached answers from the cache when it can: a file with the build-id
// asked for, or an empty file, which is elfutils' remembered miss and holds
// for cache_miss_s seconds. A cached file with another build-id, or one
// that is not ELF (written by another client, truncated by a crash, or
// served wrong to a client that does not verify), would otherwise answer
// for this build-id for ever: it is removed, reported as rejected, and the
// file downloaded again. A path that leads out of the cache answers with
// an error wrapping ErrUnsafePath, so that nothing is downloaded there.
func (d *debuginfod) cached(c clientCache, rel string, bid buildid.ID, typ string) (res fetchResult, ok bool, err error) {
	target := c.path(rel)
	f, err := c.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fetchResult{}, false, nil
	case err != nil:
		if err = c.unsafe(err, rel); errors.Is(err, ErrUnsafePath) {
			return fetchResult{}, true, err
		}
		// Unreadable (permissions): leave it; the resolver reports it.
		return fetchResult{path: target}, true, nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return fetchResult{}, false, nil
	}
	if st.Size() == 0 {
		if time.Since(st.ModTime()) < d.cacheMiss(c) {
			return fetchResult{}, true, fmt.Errorf("%w (remembered miss in %s)", ErrNotFound, target)
		}
		return fetchResult{}, false, nil
	}
	id, err := identityOf(f, target)
	var fe *FormatError
	switch {
	case err == nil && id.BuildID.Matches(bid):
		return fetchResult{path: target}, true, nil
	case err == nil:
		err = fmt.Errorf("%w: %s has %v", ErrMismatch, target, id.BuildID)
	case errors.Is(err, ErrNotELF), errors.As(err, &fe):
	default:
		return fetchResult{path: target}, true, nil
	}
	if rerr := c.root.Remove(rel); rerr != nil {
		return fetchResult{}, true, fmt.Errorf("%w: %w; removing it: %w", ErrNotFound, err, rerr)
	}
	return fetchResult{rejected: []Candidate{{Locator: "debuginfod", Path: target, Role: typ,
		Err: fmt.Errorf("%w (removed from the debuginfod cache)", err)}}}, false, nil
}

// cacheMiss reads the control file cache_miss_s (seconds), opened
// without blocking and read only while it is a small regular file.
func (d *debuginfod) cacheMiss(c clientCache) time.Duration {
	f, err := c.root.OpenFile("cache_miss_s", os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return defaultCacheMiss
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return defaultCacheMiss
	}
	b, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil {
		return defaultCacheMiss
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return defaultCacheMiss
	}
	return time.Duration(n) * time.Second
}
