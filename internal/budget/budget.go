// Package budget bounds the memory one run spends on data it decompresses
// from its inputs: compressed ELF sections (zlib, zstd, GNU .zdebug),
// MiniDebugInfo (.gnu_debugdata, xz) and compressed kernel modules. Such
// data is not bounded by the size of the file it comes from: a section may
// declare a thousand times its compressed size, and a run may open many
// files at once. Every reader reserves what it is about to allocate before
// allocating it, and releases it when the data is dropped; a reservation
// that does not fit fails with an error wrapping [ErrExceeded].
//
// The limit is a base plus a multiple of the largest input file a run has
// noted ([Budget.Input]): a large binary legitimately holds more compressed
// debug information, and the memory a run may use grows with its inputs
// anyway. [Default] is the process's budget, shared by every package, so
// that one run has one budget; its base is [DefaultBase] unless the
// environment variable PERFCHECK_MAX_DECOMPRESSED gives another (bytes,
// or with a K, M or G suffix).
package budget

import (
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

	mu    sync.Mutex
	used  int64
	input int64 // largest input noted
}

// New returns a budget of base bytes plus PerInput times the largest
// input noted; a negative base means no bound.
func New(base int64) *Budget { return &Budget{base: base} }

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
	b.input = max(b.input, size)
	b.mu.Unlock()
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
	return b.base + PerInput*b.input
}

// Reserve takes n bytes from the budget, or returns an error wrapping
// ErrExceeded (and takes nothing) when they do not fit.
func (b *Budget) Reserve(n int64) error {
	if n <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.limit(); l >= 0 && (n > l || b.used > l-n) {
		return &ExceededError{Need: n, Used: b.used, Limit: l}
	}
	b.used += n
	return nil
}

// Release gives back n bytes reserved earlier.
func (b *Budget) Release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.used < 0 {
		panic("budget: released more than reserved")
	}
	b.mu.Unlock()
}

// Used returns the bytes reserved now.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// ExceededError is a reservation that did not fit.
type ExceededError struct {
	Need, Used, Limit int64
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("%v: needs %d bytes, %d of %d in use (PERFCHECK_MAX_DECOMPRESSED raises the limit)", ErrExceeded, e.Need, e.Used, e.Limit)
}

func (e *ExceededError) Unwrap() error { return ErrExceeded }

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
