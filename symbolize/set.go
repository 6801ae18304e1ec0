package symbolize

import (
	"container/list"
	"sync"
)

// DefaultMaxOpen is how many binaries a Set keeps open when NewSet is given
// 0: enough for the DSOs of a typical profile, few enough that their
// descriptors and DWARF indexes stay well within memory.
const DefaultMaxOpen = 64

// Set opens binaries on demand, once per path, and shares them between
// goroutines. It keeps at most maxOpen binaries that are not in use open,
// closing the least recently used first, so that symbolizing a whole system
// does not hold every DWARF at once. A path that fails to open is
// remembered (until evicted) so that each of its addresses fails fast with
// the same error.
type Set struct {
	opts    Options
	maxOpen int

	mu     sync.Mutex
	m      map[string]*setEntry
	lru    *list.List // of *setEntry, front = most recently used; refs == 0 only
	closed bool
}

type setEntry struct {
	path  string
	ready chan struct{} // closed when b/err are set
	b     *Binary
	err   error
	refs  int
	elem  *list.Element // in lru while refs == 0
}

// NewSet returns a Set that opens binaries with opts and keeps at most
// maxOpen idle ones open (DefaultMaxOpen when maxOpen <= 0).
func NewSet(opts Options, maxOpen int) *Set {
	if maxOpen <= 0 {
		maxOpen = DefaultMaxOpen
	}
	return &Set{opts: opts, maxOpen: maxOpen, m: map[string]*setEntry{}, lru: list.New()}
}

// Acquire returns the opened binary for path and a release function that
// must be called when the caller is done with it; the binary is not closed
// while acquired.
func (s *Set) Acquire(path string) (*Binary, func(), error) {
	e, err := s.acquire(path)
	if err != nil {
		return nil, func() {}, err
	}
	return e.b, sync.OnceFunc(func() { s.release(e) }), nil
}

// acquire is Acquire without the release closure, so that Frames does not
// allocate.
func (s *Set) acquire(path string) (*setEntry, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	e, ok := s.m[path]
	if !ok {
		e = &setEntry{path: path, ready: make(chan struct{})}
		s.m[path] = e
	}
	e.refs++
	if e.elem != nil {
		s.lru.Remove(e.elem)
		e.elem = nil
	}
	s.mu.Unlock()
	if !ok {
		e.b, e.err = Open(path, s.opts)
		close(e.ready)
	} else {
		<-e.ready
	}
	if e.err != nil {
		s.release(e)
		return nil, e.err
	}
	return e, nil
}

func (s *Set) release(e *setEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.refs--
	if e.refs > 0 {
		return
	}
	if s.closed {
		if e.b != nil {
			e.b.Close()
		}
		return
	}
	e.elem = s.lru.PushFront(e)
	for s.lru.Len() > s.maxOpen {
		old := s.lru.Remove(s.lru.Back()).(*setEntry)
		old.elem = nil
		delete(s.m, old.path)
		if old.b != nil {
			old.b.Close()
		}
	}
}

// Frames symbolizes addr (a file address) in the binary at path; see
// [Binary.Frames].
func (s *Set) Frames(path string, addr uint64, buf []Frame) ([]Frame, error) {
	e, err := s.acquire(path)
	if err != nil {
		return buf[:0], err
	}
	defer s.release(e)
	return e.b.Frames(addr, buf)
}

// Close closes every idle binary now and each acquired one when released.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for p, e := range s.m {
		if e.refs == 0 && e.b != nil {
			e.b.Close()
		}
		delete(s.m, p)
	}
	s.lru.Init()
	return nil
}
