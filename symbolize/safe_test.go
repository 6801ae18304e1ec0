package symbolize

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/safeelf"
)

// TestSafelyPanic checks that a decoder panic is ErrMalformed with the
// one panic error type, safeelf's, and the runtime error still reachable,
// and that a nested safely does not wrap it twice.
func TestSafelyPanic(t *testing.T) {
	t.Parallel()
	err := safely(func() error {
		var s []int
		_ = s[3]
		return nil
	})
	require.ErrorIs(t, err, ErrMalformed)
	var pe *safeelf.PanicError
	require.ErrorAs(t, err, &pe)
	var re runtime.Error
	assert.ErrorAs(t, err, &re)
	assert.Regexp(t, `^[^:]+: decoder panic: runtime error: index out of range`, err.Error())

	outer := safely(func() error { return err })
	assert.Same(t, err, outer)

	plain := errors.New("plain")
	assert.Equal(t, plain, safely(func() error { return plain }))
}
