package budget

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReserveRelease(t *testing.T) {
	b := New(100)
	require.NoError(t, b.Reserve(60))
	err := b.Reserve(41)
	require.ErrorIs(t, err, ErrExceeded)
	var ee *ExceededError
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, ExceededError{Need: 41, Used: 60, Limit: 100}, *ee)
	assert.Equal(t, int64(60), b.Used(), "a refused reservation takes nothing")
	require.NoError(t, b.Reserve(40))
	b.Release(100)
	assert.Zero(t, b.Used())
	require.NoError(t, b.Reserve(0))
	assert.Panics(t, func() { b.Release(1) })
}

// TestInputRaisesLimit checks that the limit grows with the largest input
// noted, and only with the largest.
func TestInputRaisesLimit(t *testing.T) {
	b := New(100)
	b.Input(10)
	b.Input(5)
	assert.Equal(t, int64(100+PerInput*10), b.Limit())
	require.NoError(t, b.Reserve(130))
	assert.ErrorIs(t, b.Reserve(1), ErrExceeded)
}

func TestUnbounded(t *testing.T) {
	b := New(-1)
	require.NoError(t, b.Reserve(1<<62))
	assert.Equal(t, int64(-1), b.Limit())
}

// TestOverflow reserves amounts whose sum would overflow.
func TestOverflow(t *testing.T) {
	b := New(1 << 40)
	require.NoError(t, b.Reserve(1<<39))
	assert.ErrorIs(t, b.Reserve(1<<62), ErrExceeded)
	assert.Equal(t, int64(1<<39), b.Used())
}

func TestConcurrent(t *testing.T) {
	b := New(1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for range 100 {
		wg.Go(func() {
			if b.Reserve(30) == nil {
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
