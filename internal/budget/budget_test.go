package budget

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReserveRelease: a kept reservation that does not fit fails at once,
// takes nothing, and says which file and section, how much, and what the
// budget had.
func TestReserveRelease(t *testing.T) {
	t.Parallel()
	b := New(100)
	require.NoError(t, b.Reserve(60, "a.so", "section .debug_info"))
	err := b.Reserve(41, "b.so", "section .debug_line")
	require.ErrorIs(t, err, ErrExceeded)
	var ee *Error
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, Error{File: "b.so", What: "section .debug_line", Need: 41, Free: 40, Limit: 100}, *ee)
	assert.EqualError(t, err, "b.so: section .debug_line needs 41 bytes decompressed, 40 of the budget's 100 are free: "+
		"decompression budget exceeded (PERFCHECK_MAX_DECOMPRESSED raises the limit)")
	assert.Equal(t, int64(60), b.Used(), "a refused reservation takes nothing")
	require.NoError(t, b.Reserve(40, "b.so", "x"))
	b.Release(100)
	assert.Zero(t, b.Used())
	require.NoError(t, b.Reserve(0, "b.so", "x"))
	assert.Panics(t, func() { b.Release(1) })
}

// TestBorrowWaits: a passing reservation waits for passing ones in its
// way and goes through when they are given back; a kept one waits for
// them too; neither waits for kept ones, which may last the whole run.
func TestBorrowWaits(t *testing.T) {
	t.Parallel()
	b := New(100)
	r1, err := b.Borrow(context.Background(), 60, "m.ko.xz", "xz stream")
	require.NoError(t, err)
	got := make(chan error, 2)
	go func() {
		r2, err := b.Borrow(context.Background(), 60, "n.ko.xz", "xz stream")
		if err == nil {
			r2()
		}
		got <- err
	}()
	go func() {
		err := b.Reserve(50, "a.so", "section .debug_info")
		if err == nil {
			b.Release(50)
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a reservation went through while 60 of 100 were borrowed: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	r1()
	r1() // a second call gives back nothing more
	require.NoError(t, <-got)
	require.NoError(t, <-got)
	assert.Zero(t, b.Used())

	require.NoError(t, b.Reserve(60, "a.so", "section .debug_info"))
	_, err = b.Borrow(context.Background(), 41, "m.ko.xz", "xz stream")
	require.ErrorIs(t, err, ErrExceeded, "kept reservations in the way: at once")
	_, err = b.Borrow(context.Background(), 101, "m.ko.xz", "xz stream")
	require.ErrorIs(t, err, ErrExceeded, "more than the limit: at once")
	b.Release(60)
}

// TestBorrowCanceled: a wait ends with its context, taking nothing.
func TestBorrowCanceled(t *testing.T) {
	t.Parallel()
	b := New(100)
	r1, err := b.Borrow(context.Background(), 60, "m.ko.xz", "xz stream")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.Borrow(ctx, 60, "n.ko.xz", "xz stream")
	require.ErrorIs(t, err, context.Canceled)
	r1()
	assert.Zero(t, b.Used())
}

// TestInputRaisesLimit checks that the limit grows with the largest input
// noted, and only with the largest.
func TestInputRaisesLimit(t *testing.T) {
	t.Parallel()
	b := New(100)
	b.Input(10)
	b.Input(5)
	assert.Equal(t, int64(100+PerInput*10), b.Limit())
	require.NoError(t, b.Reserve(130, "f", "s"))
	assert.ErrorIs(t, b.Reserve(1, "f", "s"), ErrExceeded)
}

func TestUnbounded(t *testing.T) {
	t.Parallel()
	b := New(-1)
	require.NoError(t, b.Reserve(1<<62, "f", "s"))
	assert.Equal(t, int64(-1), b.Limit())
}

// TestOverflow reserves amounts whose sum would overflow.
func TestOverflow(t *testing.T) {
	t.Parallel()
	b := New(1 << 40)
	require.NoError(t, b.Reserve(1<<39, "f", "s"))
	assert.ErrorIs(t, b.Reserve(1<<62, "f", "s"), ErrExceeded)
	assert.Equal(t, int64(1<<39), b.Used())
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	b := New(1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for range 100 {
		wg.Go(func() {
			if b.Reserve(30, "f", "s") == nil {
				mu.Lock()
				got++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 33, got)
	assert.Equal(t, int64(990), b.Used())
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "512M": 512 << 20, "2G": 2 << 30, "8K": 8 << 10, "-1": -1} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "G", "1.5G", "x", "99999999999G"} {
		_, err := ParseSize(in)
		assert.Error(t, err, in)
	}
}

// TestDefaultFromEnvironment reads PERFCHECK_MAX_DECOMPRESSED, once.
func TestDefaultFromEnvironment(t *testing.T) {
	t.Setenv("PERFCHECK_MAX_DECOMPRESSED", "64M")
	defaultOnce = sync.Once{}
	t.Cleanup(func() { defaultOnce = sync.Once{} })
	assert.Equal(t, int64(64<<20), Default().Limit())
	assert.Same(t, Default(), Default())
}
