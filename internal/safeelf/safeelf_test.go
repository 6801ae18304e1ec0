package safeelf

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDoRecovers(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	want := errors.New("plain")
	assert.Equal(t, want, Do("f", func() error { return want }))
	assert.NoError(t, Do("f", func() error { return nil }))
}

func TestOpen(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	f, err := Open(exe)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, err = Open("/nonexistent/file")
	assert.ErrorIs(t, err, os.ErrNotExist)

	b, err := os.ReadFile(exe)
	require.NoError(t, err)
	f, err = NewFile(exe, bytes.NewReader(b))
	require.NoError(t, err)
	assert.NotEmpty(t, f.Progs)
	_, err = NewFile("junk", bytes.NewReader([]byte("not ELF")))
	assert.Error(t, err)
}
