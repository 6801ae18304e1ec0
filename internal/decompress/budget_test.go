package decompress

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBudget: a reservation larger than the budget fails at once; smaller
// ones wait for each other so that what is held never exceeds it; a
// release may be called twice.
func TestBudget(t *testing.T) {
	b := NewBudget(100)
	_, err := b.Reserve(101)
	require.ErrorIs(t, err, ErrBudget)

	r1, err := b.Reserve(60)
	require.NoError(t, err)
	var got atomic.Bool
	done := make(chan struct{})
	go func() {
		r2, err := b.Reserve(60)
		assert.NoError(t, err)
		got.Store(true)
		r2()
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	assert.False(t, got.Load(), "60 + 60 bytes held at once in a budget of 100")
	r1()
	r1()
	<-done
	r3, err := b.Reserve(100)
	require.NoError(t, err, "the budget is whole again")
	r3()
}
