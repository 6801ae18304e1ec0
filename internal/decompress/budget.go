// Package decompress bounds what decompressing untrusted input may cost:
// one memory budget per process for every decompression in flight
// ([Budget], [Default]) and an xz reader whose dictionary is capped
// ([NewXZ]), since a stream's header may declare a dictionary of 4 GiB
// for a few bytes of data and other xz readers allocate what it declares.
//
// # Security
//
// A caller reserves from the budget, before it allocates, the most its
// decompression can hold: the output it accepts and the decoder's window
// or dictionary, which never needs to be larger than that output. A
// reservation larger than the whole budget fails at once with an error
// wrapping [ErrBudget]; a smaller one waits until concurrent ones are
// released, so that the budget bounds the total however many files are
// decompressed in parallel. A caller must not reserve again while it
// holds a reservation (it could wait for itself).
package decompress

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"
)

// ErrBudget is wrapped by Reserve's error when one decompression needs
// more than the whole budget.
var ErrBudget = errors.New("more than the decompression budget")

// DefaultBudget is the size of [Default]: one decompression of the
// largest output perfcheck accepts (a kernel module of 256 MiB) with a
// dictionary as large, or many smaller ones at once.
const DefaultBudget = 512 << 20

// Default is the budget that every decompression of the process draws
// from.
var Default = NewBudget(DefaultBudget)

// Budget bounds the bytes that decompressions in flight may hold
// together. It is safe for concurrent use.
type Budget struct {
	size int64
	sem  *semaphore.Weighted
}

// NewBudget returns a budget of size bytes.
func NewBudget(size int64) *Budget {
	return &Budget{size: size, sem: semaphore.NewWeighted(size)}
}

// Size returns the budget's total.
func (b *Budget) Size() int64 { return b.size }

// Reserve takes n bytes from the budget, waiting while concurrent
// reservations leave too little, and returns the function that gives
// them back (safe to call more than once). It fails at once, wrapping
// ErrBudget, when n is more than the whole budget.
func (b *Budget) Reserve(n int64) (release func(), err error) {
	if n < 0 {
		return nil, fmt.Errorf("decompress: negative reservation %d", n)
	}
	if n > b.size {
		return nil, fmt.Errorf("%w: %d bytes needed, the budget is %d", ErrBudget, n, b.size)
	}
	if err := b.sem.Acquire(context.Background(), n); err != nil {
		return nil, err
	}
	return sync.OnceFunc(func() { b.sem.Release(n) }), nil
}
