package safeelf

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDoRecovers(t *testing.T) {
	err := Do("/some/file", func() error {
		var s []int
		_ = s[3] // a runtime error, as debug/elf's index panics are
		return nil
	})
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "/some/file", pe.File)
	assert.Contains(t, err.Error(), "/some/file: decoder panic: ")
	var re runtime.Error
	assert.ErrorAs(t, err, &re, "the runtime error stays reachable")

	err = Do("f", func() error { panic("not an error") })
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "not an error", pe.Value)
	assert.Nil(t, pe.Unwrap())
}

func TestDoPassesErrors(t *testing.T) {
	want := errors.New("plain")
	assert.Equal(t, want, Do("f", func() error { return want }))
	assert.NoError(t, Do("f", func() error { return nil }))
}

func TestPanicErrorWithoutFile(t *testing.T) {
	err := Do("", func() error { panic("bad offset") })
	assert.EqualError(t, err, "decoder panic: bad offset", "the caller's error names the file")
}
