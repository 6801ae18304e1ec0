package unwind

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/safeelf"
)

func fileBuildID(t *testing.T, path string) buildid.ID {
	t.Helper()
	id, err := buildidcache.ReadFileIdentity(path)
	require.NoError(t, err)
	require.NotEmpty(t, id.BuildID, path)
	return id.BuildID
}

// The build-id asked for is checked on the file whose tables are read: a
// lookup verified a file at the path, and another build put there since
// is refused, naming its build-id.
func TestReadTableBuildID(t *testing.T) {
	t.Parallel()
	lib := filepath.Join(fixtureBin, "libhot.so")
	id := fileBuildID(t, lib)
	tb, err := ReadTable(lib, id)
	require.NoError(t, err)
	assert.NotEmpty(t, tb.fdes)
	_, err = ReadTable(lib, nil)
	require.NoError(t, err, "no build-id asked for")

	other := fileBuildID(t, filepath.Join(fixtureBin, "cshared"))
	_, err = ReadTable(lib, other)
	var me *buildidcache.MismatchError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, id, me.Got)
	assert.Equal(t, other, me.Want)
	assert.ErrorIs(t, err, buildidcache.ErrMismatch)
	assert.Contains(t, err.Error(), id.String())
}

// A malformed file is an error naming it, never a panic, and a file
// without .eh_frame says so.
func TestReadTableErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(fixtureBin, "libhot.so"))
	require.NoError(t, err)
	// Section headers pointing past the end of the file.
	cut := filepath.Join(dir, "cut.so")
	require.NoError(t, os.WriteFile(cut, b[:len(b)/2], 0o644))
	_, err = ReadTable(cut, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), cut)
	var pe *safeelf.PanicError
	if errors.As(err, &pe) {
		assert.Equal(t, cut, pe.File)
	}

	_, err = ReadTable(filepath.Join(fixtureBin, "goprog"), nil)
	require.ErrorIs(t, err, ErrNoCFI)
	assert.Contains(t, err.Error(), "goprog: ")

	_, err = ReadTable(filepath.Join(dir, "absent"), nil)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
