package buildidcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
	"golang.org/x/sync/singleflight"
)

// Defaults where this package departs from elfutils on purpose (see
// docs/buildidcache.md): elfutils waits 90 s per server and request, which
// an unreachable server in $DEBUGINFOD_URLS turns into minutes per profile.
const (
	defaultDebuginfodTimeout  = 10 * time.Second
	defaultDebuginfodDeadline = 30 * time.Second
	defaultCacheMiss          = 600 * time.Second // elfutils' cache_miss_s default
)

// debuginfod is the client: elfutils' protocol (GET <url>/buildid/<hex>/
// executable|debuginfo) and elfutils' cache layout
// (<cache>/<hex>/executable|debuginfo, an empty file for a remembered miss),
// so that gdb, perf and this package share downloads.
type debuginfod struct {
	urls     []string
	cache    string
	timeout  time.Duration
	deadline time.Duration
	maxSize  int64
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
		maxSize: opts.DebuginfodMaxSize, client: opts.HTTPClient, progress: opts.Progress, down: map[string]error{}}
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
	if d.deadline == 0 {
		d.deadline = defaultDebuginfodDeadline
	}
	if d.maxSize == 0 {
		if n, err := strconv.ParseInt(os.Getenv("DEBUGINFOD_MAXSIZE"), 10, 64); err == nil && n > 0 {
			d.maxSize = n
		}
	}
	if d.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: d.timeout}).DialContext
		tr.ResponseHeaderTimeout = d.timeout
		tr.TLSHandshakeTimeout = d.timeout
		d.client = &http.Client{Transport: tr}
	}
	return d
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
	target := filepath.Join(cache, hexID, typ)
	res, ok, err := d.cached(target, bid, typ)
	if ok {
		return res, err
	}
	set := res // a wrong cached file set aside
	if len(d.urls) == 0 {
		return set, fmt.Errorf("%w: no debuginfod URL configured", ErrNotFound)
	}
	v, err, _ := d.flight.Do(hexID+"/"+typ, func() (any, error) {
		// A download that finished between our cache check and this
		// call has left its file: look again before asking a server.
		res, ok, err := d.cached(target, bid, typ)
		if ok {
			return res, err
		}
		set := res // set aside by this call, reported with the download
		// The download serves every goroutine waiting on it, so it must not
		// die with the first caller's context; the stall timeout and the
		// deadline bound it instead.
		res, err = d.download(context.WithoutCancel(ctx), bid, typ, target)
		res.rejected = append(set.rejected, res.rejected...)
		return res, err
	})
	res, _ = v.(fetchResult)
	res.rejected = append(set.rejected, res.rejected...)
	return res, err
}

// cached answers from the cache when it can: a file with the build-id
// asked for, or an empty file, which is elfutils' remembered miss and holds
// for cache_miss_s seconds. A cached file with another build-id, or one
// that is not ELF (written by another client, truncated by a crash, or
// served wrong to a client that does not verify), would otherwise answer
// for this build-id for ever: it is removed, reported as rejected, and the
// file downloaded again.
func (d *debuginfod) cached(target string, bid buildid.ID, typ string) (res fetchResult, ok bool, err error) {
	st, err := os.Stat(target)
	if err != nil || !st.Mode().IsRegular() {
		return fetchResult{}, false, nil
	}
	if st.Size() > 0 {
		id, err := ReadFileIdentity(target)
		var fe *FormatError
		switch {
		case err == nil && id.BuildID.Matches(bid):
			return fetchResult{path: target}, true, nil
		case err == nil:
			err = fmt.Errorf("%w: %s has %v", ErrMismatch, target, id.BuildID)
		case errors.Is(err, ErrNotELF), errors.As(err, &fe):
		default:
			// Unreadable (permissions): leave it; the resolver reports it.
			return fetchResult{path: target}, true, nil
		}
		if rerr := os.Remove(target); rerr != nil {
			return fetchResult{}, true, fmt.Errorf("%w: %w; removing it: %w", ErrNotFound, err, rerr)
		}
		return fetchResult{rejected: []Candidate{{Locator: "debuginfod", Path: target, Role: typ,
			Err: fmt.Errorf("%w (removed from the debuginfod cache)", err)}}}, false, nil
	}
	if time.Since(st.ModTime()) < d.cacheMiss() {
		return fetchResult{}, true, fmt.Errorf("%w (remembered miss in %s)", ErrNotFound, target)
	}
	return fetchResult{}, false, nil
}

func (d *debuginfod) cacheMiss() time.Duration {
	b, err := os.ReadFile(filepath.Join(d.cache, "cache_miss_s"))
	if err != nil {
		return defaultCacheMiss
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return defaultCacheMiss
	}
	return time.Duration(n) * time.Second
}

// serverOutcome is one server's answer to one request.
type serverOutcome struct {
	url      string
	tmp      string // verified temporary file, "" on failure
	err      error
	notFound bool
	rejected *Candidate
}

// download asks every live server at once, as elfutils does (one curl
// multi handle for all of $DEBUGINFOD_URLS), and keeps the first verified
// answer.
func (d *debuginfod) download(ctx context.Context, bid buildid.ID, typ, target string) (fetchResult, error) {
	var res fetchResult
	d.mu.Lock()
	if d.started.IsZero() {
		d.started = time.Now()
	}
	if d.deadline > 0 && time.Since(d.started) > d.deadline {
		d.mu.Unlock()
		return res, ErrDeadline
	}
	var live []string
	for _, u := range d.urls {
		if err := d.down[u]; err != nil {
			res.tried = append(res.tried, fmt.Sprintf("debuginfod %s: skipped, failed earlier: %v", u, err))
			continue
		}
		live = append(live, u)
	}
	d.mu.Unlock()
	if len(live) == 0 {
		return res, fmt.Errorf("%w: every server failed earlier", ErrServer)
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, fmt.Errorf("debuginfod cache: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make(chan serverOutcome, len(live))
	for _, u := range live {
		go func() { out <- d.get(ctx, u, bid, typ, dir) }()
	}
	var winner *serverOutcome
	notFound := 0
	for range live {
		o := <-out
		switch {
		case o.tmp != "" && winner == nil:
			winner = &o
			cancel() // the others can stop
		case o.tmp != "":
			os.Remove(o.tmp)
		case o.rejected != nil:
			res.rejected = append(res.rejected, *o.rejected)
		case o.notFound:
			notFound++
			res.tried = append(res.tried, fmt.Sprintf("debuginfod %s: %s not found", o.url, typ))
		case o.err != nil && winner == nil:
			res.tried = append(res.tried, fmt.Sprintf("debuginfod %s: %v", o.url, o.err))
			if ctx.Err() == nil {
				d.mu.Lock()
				d.down[o.url] = o.err
				d.mu.Unlock()
			}
		}
	}
	if winner != nil {
		if err := os.Rename(winner.tmp, target); err != nil {
			os.Remove(winner.tmp)
			return res, fmt.Errorf("debuginfod cache: %w", err)
		}
		res.path, res.url = target, winner.url
		return res, nil
	}
	if notFound == len(live) && d.cache != "" {
		// Remember the miss as elfutils does: an empty file at the
		// target's name (elfutils 0.188 writes it mode 0644), honoured for
		// cache_miss_s by its mtime.
		if f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		} else if errors.Is(err, os.ErrExist) {
			now := time.Now()
			os.Chtimes(target, now, now) // renew an expired miss
		}
	}
	return res, fmt.Errorf("%w: %s for %v on %d server(s)", ErrNotFound, typ, bid, len(live))
}

// get downloads from one server into a temporary file in dir and verifies
// it. Nothing unverified is ever renamed into the cache.
func (d *debuginfod) get(ctx context.Context, base string, bid buildid.ID, typ, dir string) serverOutcome {
	o := serverOutcome{url: base}
	u := base + "/buildid/" + bid.String() + "/" + typ
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		o.err = err
		return o
	}
	req.Header.Set("User-Agent", "perfcheck")
	// The whole exchange must make progress every d.timeout: the timer
	// is pushed back by every read and cancels the request when it fires.
	stall := time.AfterFunc(d.timeout, cancel)
	defer stall.Stop()
	resp, err := d.client.Do(req)
	if err != nil {
		o.err = fmt.Errorf("%w: %s: %w", ErrServer, u, timeoutText(err, stall, d.timeout))
		return o
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		o.notFound = true
		return o
	case resp.StatusCode != http.StatusOK:
		o.err = fmt.Errorf("%w: %s: HTTP %s", ErrServer, u, resp.Status)
		return o
	}
	if d.maxSize > 0 && resp.ContentLength > d.maxSize {
		o.err = fmt.Errorf("%w: %s: %d bytes is more than DEBUGINFOD_MAXSIZE %d", ErrServer, u, resp.ContentLength, d.maxSize)
		return o
	}
	f, err := os.CreateTemp(dir, "."+typ+".tmp-*")
	if err != nil {
		o.err = err
		return o
	}
	tmp := f.Name()
	keep := false
	defer func() {
		if !keep {
			os.Remove(tmp)
		}
	}()
	pr := &progressReader{r: resp.Body, stall: stall, timeout: d.timeout, w: d.progress,
		label: bid.String() + " " + typ, total: resp.ContentLength, max: d.maxSize}
	_, err = io.Copy(f, pr)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	pr.finish()
	if err != nil {
		o.err = fmt.Errorf("%w: %s: %w", ErrServer, u, timeoutText(err, stall, d.timeout))
		return o
	}
	id, err := ReadFileIdentity(tmp)
	switch {
	case err != nil:
		o.rejected = &Candidate{Locator: "debuginfod", Path: u, URL: base, Role: typ, Err: fmt.Errorf("%s: %w", u, err)}
		return o
	case !id.BuildID.Matches(bid):
		o.rejected = &Candidate{Locator: "debuginfod", Path: u, URL: base, Role: typ,
			Err: fmt.Errorf("%w: %s served a file with build-id %v", ErrMismatch, u, id.BuildID)}
		return o
	}
	keep = true
	o.tmp = tmp
	return o
}

// timeoutText names a stall for what it is, whichever timer noticed it
// first (ours: "context canceled"; the transport's dial or header timeout).
func timeoutText(err error, stall *time.Timer, timeout time.Duration) error {
	var ne net.Error
	if (errors.Is(err, context.Canceled) && !stall.Stop()) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("no progress for %v (DEBUGINFOD_TIMEOUT)", timeout)
	}
	return err
}

// progressReader pushes the stall timer back on every read, enforces
// DEBUGINFOD_MAXSIZE on bodies without Content-Length and prints progress
// at most every 250 ms for downloads that take longer than a second.
type progressReader struct {
	r       io.Reader
	stall   *time.Timer
	timeout time.Duration
	w       io.Writer
	label   string
	total   int64
	max     int64
	n       int64
	start   time.Time
	last    time.Time
	printed bool
}

func (p *progressReader) Read(b []byte) (int, error) {
	if p.start.IsZero() {
		p.start = time.Now()
	}
	n, err := p.r.Read(b)
	if n > 0 {
		p.stall.Reset(p.timeout)
		p.n += int64(n)
		if p.max > 0 && p.n > p.max {
			return n, fmt.Errorf("more than DEBUGINFOD_MAXSIZE %d bytes", p.max)
		}
	}
	if p.w != nil {
		now := time.Now()
		if now.Sub(p.start) > time.Second && now.Sub(p.last) > 250*time.Millisecond {
			p.last = now
			p.printed = true
			if p.total > 0 {
				fmt.Fprintf(p.w, "\rdebuginfod: %s %.1f/%.1f MB", p.label, float64(p.n)/1e6, float64(p.total)/1e6)
			} else {
				fmt.Fprintf(p.w, "\rdebuginfod: %s %.1f MB", p.label, float64(p.n)/1e6)
			}
		}
	}
	return n, err
}

func (p *progressReader) finish() {
	if p.printed {
		fmt.Fprintf(p.w, "\rdebuginfod: %s %.1f MB done\n", p.label, float64(p.n)/1e6)
	}
}
