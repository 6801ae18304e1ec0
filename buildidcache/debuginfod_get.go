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
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
)

// serverOutcome is one server's answer to one request.
type serverOutcome struct {
	url      string
	tmp      string // verified temporary file, relative to the cache; "" on failure
	err      error
	notFound bool
	rejected *Candidate
}

// download asks every live server at once, as elfutils does (one curl
// multi handle for all of $DEBUGINFOD_URLS), and keeps the first verified
// answer, which it renames to rel in the cache.
func (d *debuginfod) download(ctx context.Context, c clientCache, bid buildid.ID, typ, rel string) (fetchResult, error) {
	var res fetchResult
	d.mu.Lock()
	if d.started.IsZero() {
		d.started = time.Now()
	}
	started := d.started
	if d.deadline > 0 && time.Since(started) > d.deadline {
		d.mu.Unlock()
		return res, fmt.Errorf("%w: no download starts %v after the first (DEBUGINFOD_MAXTIME)", ErrDeadline, d.deadline)
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
	dir := path.Dir(rel)
	if err := c.root.MkdirAll(dir, 0o700); err != nil {
		return res, c.unsafe(err, dir)
	}
	// A download in progress when the Resolver's time is up ends there
	// too, so that all of them together take no longer than one may.
	var cancel context.CancelFunc
	if d.deadline > 0 {
		ctx, cancel = context.WithDeadlineCause(ctx, started.Add(d.deadline),
			fmt.Errorf("%w: not complete %v after the first download began (DEBUGINFOD_MAXTIME)", ErrDeadline, d.deadline))
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	out := make(chan serverOutcome, len(live))
	for _, u := range live {
		go func() { out <- d.get(ctx, c, u, bid, typ, dir) }()
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
			c.root.Remove(o.tmp)
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
		if err := c.root.Rename(winner.tmp, rel); err != nil {
			c.root.Remove(winner.tmp)
			return res, c.unsafe(err, rel)
		}
		res.path, res.url = c.path(rel), winner.url
		return res, nil
	}
	if notFound == len(live) && d.cache != "" {
		rememberMiss(c, rel)
	}
	return res, fmt.Errorf("%w: %s for %v on %d server(s)", ErrNotFound, typ, bid, len(live))
}

// rememberMiss leaves elfutils' remembered miss, an empty file at the
// target's name (elfutils 0.188 writes it mode 0644), honoured for
// cache_miss_s by its mtime. An expired one is replaced rather than
// touched: Root.Chtimes would follow a symlink swapped in.
func rememberMiss(c clientCache, rel string) {
	create := func() error {
		f, err := c.root.OpenFile(rel, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
		}
		return err
	}
	if err := create(); errors.Is(err, fs.ErrExist) {
		if st, err := c.root.Lstat(rel); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
			if c.root.Remove(rel) == nil {
				create()
			}
		}
	}
}

// get downloads from one server into a temporary file in dir and verifies
// it. Nothing unverified is ever renamed into the cache.
func (d *debuginfod) get(ctx context.Context, c clientCache, base string, bid buildid.ID, typ, dir string) serverOutcome {
	o := serverOutcome{url: base}
	u := base + "/buildid/" + bid.String() + "/" + typ
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := d.watch(cancel)
	defer w.stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		o.err = err
		return o
	}
	req.Header.Set("User-Agent", "perfcheck")
	// The file as it is: a compressed body would be inflated past every
	// size check (and a client passed in Options may ask for gzip).
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := d.client.Do(req)
	if err != nil {
		o.err = fmt.Errorf("%w: %s: %w", ErrServer, u, w.explain(ctx, err))
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
	reject := func(err error) serverOutcome {
		o.rejected = &Candidate{Locator: "debuginfod", Path: u, URL: base, Role: typ, Err: err}
		return o
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return reject(fmt.Errorf("%w: %s: sent with Content-Encoding %q, which was not asked for", ErrServer, u, ce))
	}
	limit := d.limit(typ)
	if limit > 0 && resp.ContentLength > limit {
		return reject(fmt.Errorf("%w: %s: %d bytes is more than %d (DEBUGINFOD_MAXSIZE)", ErrServer, u, resp.ContentLength, limit))
	}
	tmp, f, err := createDownload(c.root, dir, typ)
	if err != nil {
		o.err = c.unsafe(err, dir)
		return o
	}
	defer func() {
		f.Close()
		if o.tmp == "" {
			c.root.Remove(tmp)
		}
	}()
	ew := &elfWriter{f: f, max: limit}
	pr := &progressReader{r: resp.Body, w: d.progress, label: bid.String() + " " + typ,
		total: resp.ContentLength, onRead: w.add}
	_, err = io.Copy(ew, pr)
	pr.finish()
	if err == nil {
		err = ew.finish()
	}
	var ref *refusal
	switch {
	case errors.As(err, &ref):
		return reject(fmt.Errorf("%w: %s: %v", ErrServer, u, ref))
	case err != nil:
		o.err = fmt.Errorf("%w: %s: %w", ErrServer, u, w.explain(ctx, err))
		return o
	}
	id, err := identityOf(f, u)
	switch {
	case err != nil:
		return reject(fmt.Errorf("%s: %w", u, err))
	case !id.BuildID.Matches(bid):
		return reject(fmt.Errorf("%w: %s served a file with build-id %v", ErrMismatch, u, id.BuildID))
	}
	o.tmp = tmp
	return o
}

// createDownload creates a temporary file for a download of type typ in
// dir, through root, readable and writable: the download is read back as
// it arrives (elfWriter).
func createDownload(root *os.Root, dir, typ string) (string, *os.File, error) {
	return openTemp(root, dir, typ, os.O_RDWR, 0o600)
}

// watchdog cancels a download that breaks elfutils' rules: at least
// minProgress bytes in every DEBUGINFOD_TIMEOUT (the time to connect and to
// get the response counts, as curl's low-speed limit does), and the whole
// file within DEBUGINFOD_MAXTIME. Each cancels with its reason as the
// context's cause, so that the error says which rule cut the download.
type watchdog struct {
	cancel  context.CancelCauseFunc
	timeout time.Duration
	n       atomic.Int64 // bytes received

	mu      sync.Mutex
	mark    int64 // n when the current window began
	window  *time.Timer
	total   *time.Timer
	stopped bool
}

func (d *debuginfod) watch(cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{cancel: cancel, timeout: d.timeout}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.window = time.AfterFunc(d.timeout, w.check)
	if max := d.maxTime; max > 0 {
		w.total = time.AfterFunc(max, func() {
			cancel(fmt.Errorf("not complete within %v (DEBUGINFOD_MAXTIME)", max))
		})
	}
	return w
}

func (w *watchdog) add(n int) { w.n.Add(int64(n)) }

// check ends a window: too little progress cancels, else a new window
// begins.
func (w *watchdog) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	got := w.n.Load() - w.mark
	if got < minProgress {
		w.cancel(fmt.Errorf("no progress of %d KiB within %v (%d bytes; DEBUGINFOD_TIMEOUT)", minProgress>>10, w.timeout, got))
		return
	}
	w.mark += got
	w.window.Reset(w.timeout)
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.window.Stop()
	if w.total != nil {
		w.total.Stop()
	}
}

// explain names what cut a request: the watchdog's reason, or the
// transport's own timeouts (dial, TLS, response headers), which are
// DEBUGINFOD_TIMEOUT too.
func (w *watchdog) explain(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("no progress within %v (DEBUGINFOD_TIMEOUT)", w.timeout)
	}
	return err
}

// refusal is a download refused for what it holds rather than for how the
// server sent it: the server is not marked dead for it.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error { return &refusal{fmt.Sprintf(format, args...)} }

// elfWriter writes a download to its temporary file and refuses it as
// soon as it is no ELF file, grows past max bytes, or goes on past the end
// its ELF headers give (elfExtent): a server cannot make us store a
// good file followed by gigabytes of anything. The header tables are read
// back from the file once they are in; linkers put the section headers
// last, so for most files the end is known only at the end, and max is the
// bound until then.
type elfWriter struct {
	f      *os.File
	max    int64 // 0: none
	n      int64
	head   [64]byte
	tables int64 // where the header tables end: 0 until known, -1 when the header cannot tell
	end    int64 // the ELF file's end: 0 until known
}

func (w *elfWriter) Write(p []byte) (int, error) {
	next := w.n + int64(len(p))
	if w.end > 0 && next > w.end {
		return 0, refuse("goes on past the %d bytes its ELF headers describe", w.end)
	}
	if w.max > 0 && next > w.max {
		return 0, refuse("more than %d bytes (DEBUGINFOD_MAXSIZE)", w.max)
	}
	m, err := w.f.Write(p)
	if w.n < int64(len(w.head)) {
		copy(w.head[w.n:], p[:m])
	}
	w.n += int64(m)
	if err != nil {
		return m, err
	}
	return m, w.measure()
}

// measure learns where the header tables end, then, once they are in,
// the ELF file's end.
func (w *elfWriter) measure() error {
	if w.tables == 0 {
		end, ok, err := headerTablesEnd(w.head[:min(w.n, int64(len(w.head)))])
		switch {
		case err != nil:
			return refuse("not an ELF file")
		case ok:
			w.tables = end
		case w.n >= int64(len(w.head)):
			w.tables = -1
		}
	}
	if w.tables > 0 && w.end == 0 && w.n >= w.tables {
		end, err := elfExtent(w.f, w.n, "")
		if err != nil {
			return refuse("%v", err)
		}
		if w.n > end {
			return refuse("goes on past the %d bytes its ELF headers describe", end)
		}
		w.end = end
	}
	return nil
}

// finish measures the complete file, whatever its header could tell.
func (w *elfWriter) finish() error {
	end, err := elfExtent(w.f, w.n, "")
	if errors.Is(err, ErrNotELF) {
		return refuse("not an ELF file")
	} else if err != nil {
		return refuse("%v", err)
	}
	if w.n > end {
		return refuse("%d bytes, past the %d bytes its ELF headers describe", w.n, end)
	}
	return nil
}

// progressReader counts what arrives for the watchdog and prints progress
// at most every 250 ms for downloads that take longer than a second.
type progressReader struct {
	r       io.Reader
	w       io.Writer
	label   string
	total   int64
	onRead  func(n int)
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
	p.n += int64(n)
	if n > 0 && p.onRead != nil {
		p.onRead(n)
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
