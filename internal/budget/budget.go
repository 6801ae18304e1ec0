// Package budget bounds the memory one run spends on data it decompresses
// from its inputs: compressed ELF sections (zlib, zstd, GNU .zdebug),
// MiniDebugInfo (.gnu_debugdata, xz), compressed kernel modules, and the
// tables standard-library readers build from counts in those inputs. Such
// data is not bounded by the size of the file it comes from: a section may
// declare a thousand times its compressed size, and a run may open many
// files at once.
//
// The limit is a base plus [PerInput] times the largest input file the run
// has noted ([Budget.Input]): a large binary legitimately holds more
// compressed debug information, and the memory a run may use grows with
// its inputs anyway. [Default] is the process's budget, shared by every
// package, so that one run has one budget; its base is [DefaultBase] unless
// the environment variable PERFCHECK_MAX_DECOMPRESSED gives another (bytes,
// or with a K, M or G suffix; negative for no bound).
//
// # Security
//
// Every reader reserves what it is about to allocate before allocating
// it. There are two kinds of reservation. One that is kept ([Budget.Reserve])
// lasts as long as the data does (a binary's sections until it is closed)
// and is given back with [Budget.Release]. One that passes
// ([Budget.Borrow]) covers a single decompression whose caller reserves
// nothing else before releasing it (a kernel module read for its
// build-id). A reservation of either kind that the kept ones leave no room
// for fails at once with an [*Error] naming the file and the section,
// wrapping [ErrExceeded]: waiting could last as long as the run. One that
// only passing reservations are in the way of waits for them, since each
// ends on its own; so a refusal never depends on what else happened to be
// in flight, and what is reserved never exceeds the limit.
package budget

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ErrExceeded means a reservation did not fit the budget: the input would
// decompress to more than the run may hold.
var ErrExceeded = errors.New("decompression budget exceeded")

const (
	// DefaultBase is the base of the default budget: far above the
	// compressed debug information of a typical profile's binaries held
	// at once, and low enough that a run stays within a few hundred MB
	// whatever its inputs declare.
	DefaultBase = 192 << 20
	// PerInput is how many times the largest input's size the limit
	// adds to the base: debug information compresses three to five
	// times, so a large binary's own sections fit.
	PerInput = 3
)

// Budget is a bound on the bytes of decompressed data held at once. It is
// safe for concurrent use.
type Budget struct {
	base int64 // negative: no bound

	mu      sync.Mutex
	kept    int64         // by Reserve
	passing int64         // by Borrow
	input   int64         // largest input noted
	freed   chan struct{} // closed, and replaced, when room is given back
}

// New returns a budget of base bytes plus PerInput times the largest
// input noted; a negative base means no bound.
func New(base int64) *Budget { return &Budget{base: base, freed: make(chan struct{})} }

var (
	defaultOnce sync.Once
	defaultB    *Budget
)

// Default returns the process's budget (see the package documentation).
func Default() *Budget {
	defaultOnce.Do(func() {
		base := int64(DefaultBase)
		if v := os.Getenv("PERFCHECK_MAX_DECOMPRESSED"); v != "" {
			if n, err := ParseSize(v); err == nil {
				base = n
			}
		}
		defaultB = New(base)
	})
	return defaultB
}

// Input notes an input file of size bytes, which raises the limit to
// base + PerInput*size if that is more.
func (b *Budget) Input(size int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if size > b.input {
		b.input = size
		b.wake()
	}
}

// Limit returns the current limit, negative for none.
func (b *Budget) Limit() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit()
}

func (b *Budget) limit() int64 {
	if b.base < 0 {
		return -1
	}
	return min(b.base+PerInput*b.input, 1<<62)
}

// Used returns the bytes reserved now, of both kinds.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.kept + b.passing
}

// Reserve takes n bytes for decompressed data of the section what of file
// that is kept until the caller gives them back with Release. It fails at
// once with an *Error when the bytes other kept reservations hold leave
// no room for n, and waits while only passing ones ([Budget.Borrow]) are
// in the way. The caller must not hold a passing reservation.
func (b *Budget) Reserve(n int64, file, what string) error {
	return b.take(context.Background(), n, file, what, &b.kept)
}

// Release gives back n bytes reserved earlier with Reserve.
func (b *Budget) Release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.kept -= n
	if b.kept < 0 {
		panic("budget: released more than reserved")
	}
	b.wake()
}

// Borrow takes n bytes for one decompression of the section what of file
// and returns the function that gives them back (safe to call more than
// once). The caller must reserve nothing else until it has called it. It
// fails at once, as Reserve does, when kept reservations leave no room
// for n, and waits while passing ones are in the way, or until ctx ends.
func (b *Budget) Borrow(ctx context.Context, n int64, file, what string) (release func(), err error) {
	if err := b.take(ctx, n, file, what, &b.passing); err != nil {
		return nil, err
	}
	return sync.OnceFunc(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.passing -= max(n, 0)
		b.wake()
	}), nil
}

// take adds n to *to (b.kept or b.passing) once it fits.
func (b *Budget) take(ctx context.Context, n int64, file, what string, to *int64) error {
	if n <= 0 {
		return nil
	}
	b.mu.Lock()
	for {
		l := b.limit()
		if l < 0 || (n <= l && b.kept+b.passing <= l-n) {
			*to += n
			b.mu.Unlock()
			return nil
		}
		if n > l || b.kept > l-n {
			err := &Error{File: file, What: what, Need: n, Free: max(l-b.kept-b.passing, 0), Limit: l}
			b.mu.Unlock()
			return err
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return fmt.Errorf("%s: %s: waiting for %d bytes of the decompression budget: %w", file, what, n, context.Cause(ctx))
		}
		b.mu.Lock()
	}
}

// wake tells waiting reservations that room was given back. Called with
// b.mu held.
func (b *Budget) wake() {
	close(b.freed)
	b.freed = make(chan struct{})
}

// Error is a reservation that did not fit: what of File would have
// needed Need bytes, with Free bytes of Limit not reserved.
type Error struct {
	File              string // the input file
	What              string // the section or stream, e.g. "section .debug_info"
	Need, Free, Limit int64
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s needs %d bytes decompressed, %d of the budget's %d are free: %v (PERFCHECK_MAX_DECOMPRESSED raises the limit)",
		e.File, e.What, e.Need, e.Free, e.Limit, ErrExceeded)
}

func (e *Error) Unwrap() error { return ErrExceeded }

// ParseSize parses a size in bytes with an optional K, M or G suffix
// (powers of 1024); a negative size means no bound.
func ParseSize(s string) (int64, error) {
	mult, num := int64(1), s
	for i, suffix := range []string{"K", "M", "G"} {
		if strings.HasSuffix(s, suffix) {
			mult, num = 1<<(10*(i+1)), s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n * mult, nil
}
