package check

import (
	"context"
	"sync"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/perfdata"
)

// Opening the kernel's symbols is the slowest single step of a symbolized
// check: a kallsyms listing (this boot's /proc/kallsyms, or the copy in
// perf's build-id cache) has some 100,000 lines, which the kernel generates
// as they are read and which are all parsed, while a user binary is read
// lazily. Nothing in it depends on the samples, so when the header's
// build-id table names the recording's kernel, Analyze asks the locator
// for it and starts opening the file it names while the records are read;
// the symbolization after reading then finds it open. The locator's answer
// is kept (memoLocator), so the verdict, given after reading, rests on the
// same single lookup (one query to a debuginfod server at most).

// memoLocator remembers a locator's answers, one lookup per query.
type memoLocator struct {
	base locator
	mu   sync.Mutex
	memo map[memoKey]*memoEntry
}

type memoKey struct {
	path    string
	kind    dso.Kind
	buildID string
	pid     int
}

type memoEntry struct {
	once  sync.Once
	found *buildidcache.Result
	err   error
}

func newMemoLocator(base locator) *memoLocator {
	return &memoLocator{base: base, memo: map[memoKey]*memoEntry{}}
}

// Locate implements locator. A query asked while the same one is under way
// waits for its answer. A cancelled lookup is not remembered.
func (m *memoLocator) Locate(ctx context.Context, q buildidcache.Query) (*buildidcache.Result, error) {
	k := memoKey{q.Path, q.Kind, string(q.BuildID), q.PID}
	m.mu.Lock()
	e := m.memo[k]
	if e == nil {
		e = &memoEntry{}
		m.memo[k] = e
	}
	m.mu.Unlock()
	e.once.Do(func() { e.found, e.err = m.base.Locate(ctx, q) })
	if e.err != nil && ctx.Err() != nil {
		m.mu.Lock()
		if m.memo[k] == e {
			delete(m.memo, k)
		}
		m.mu.Unlock()
	}
	return e.found, e.err
}

// preopener is a symbolOpener that can start opening a file before it is
// asked for: Open of the same path and kind then takes the file opened
// ahead (once); any other Open goes to the base opener.
type preopener struct {
	base symbolOpener
	mu   sync.Mutex
	// ahead holds the files being opened or opened ahead and not yet
	// taken.
	ahead map[preKey]*preopened
	wg    sync.WaitGroup
}

type preKey struct {
	path string
	kind dso.Kind
}

type preopened struct {
	done chan struct{}
	lk   symbolLookup
	err  error
}

func newPreopener(base symbolOpener) *preopener {
	return &preopener{base: base, ahead: map[preKey]*preopened{}}
}

// start begins opening path on its own goroutine.
func (p *preopener) start(path string, kind dso.Kind) {
	k := preKey{path, kind}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ahead[k] != nil {
		return
	}
	o := &preopened{done: make(chan struct{})}
	p.ahead[k] = o
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(o.done)
		o.lk, o.err = p.base.Open(path, kind)
	}()
}

// Open implements symbolOpener.
func (p *preopener) Open(path string, kind dso.Kind) (symbolLookup, error) {
	k := preKey{path, kind}
	p.mu.Lock()
	o := p.ahead[k]
	delete(p.ahead, k)
	p.mu.Unlock()
	if o == nil {
		return p.base.Open(path, kind)
	}
	<-o.done
	return o.lk, o.err
}

// close waits for the files being opened ahead and closes those never
// taken.
func (p *preopener) close() {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, o := range p.ahead {
		if o.lk != nil {
			o.lk.Close()
		}
		delete(p.ahead, k)
	}
}

// prefetchKernel asks loc for the kernel the build-id table names and
// starts opening the file the check will symbolize it with (the same
// choice judge makes: symbolFile). It does
// nothing when the table names no single host kernel; a wrong guess costs
// only the work of opening a file that is then closed unused.
func prefetchKernel(ctx context.Context, ids []perfdata.BuildIDEntry, loc locator, pre *preopener) {
	var id buildid.ID
	for _, e := range ids {
		if e.CPUMode != perfdata.CPUModeKernel || e.Filename != "[kernel.kallsyms]" || e.BuildID.IsZero() {
			continue
		}
		if id != nil && !id.Matches(e.BuildID) {
			return // two kernels: leave it to the verdicts
		}
		id = e.BuildID
	}
	if id == nil {
		return
	}
	found, err := loc.Locate(ctx, buildidcache.Query{Path: "[kernel.kallsyms]", Kind: dso.Kernel, BuildID: id})
	if err != nil {
		return
	}
	if p := symbolFile(found); p != "" {
		pre.start(p, dso.Kernel)
	}
}
