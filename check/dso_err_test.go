package check_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/check"
)

// A library user reaches why a binary was not found through DSO.Err:
// errors.Is finds buildidcache.ErrNotFound, errors.As the
// *buildidcache.NotFoundError with what was tried and rejected. Here the
// recording's libhot.so is looked for under a --symfs root whose file at
// its path is another binary, and nowhere else.
func TestDSOErrNotFound(t *testing.T) {
	symfs, at := otherLibUnderSymFS(t)

	opts := check.Options{NoSymbols: true, Lookup: buildidcache.Options{BuildIDDir: t.TempDir(), DebugDirs: []string{},
		DebuginfodURLs: []string{}, SymFS: symfs}}
	res, err := check.Analyze(context.Background(), check.Path("../testdata/perf/cshared-fp.data"), opts)
	require.NoError(t, err)
	lib := recordedLibDSO(t, res)
	require.Equal(t, check.Mismatch, lib.Verdict, lib.Reason)
	require.Error(t, lib.Err)
	assert.ErrorIs(t, lib.Err, buildidcache.ErrNotFound)
	var nf *buildidcache.NotFoundError
	require.True(t, errors.As(lib.Err, &nf), "%v", lib.Err)
	assert.NotEmpty(t, nf.Tried)
	require.Len(t, nf.Rejected, 1)
	assert.Equal(t, at, nf.Rejected[0].Path)
	assert.ErrorIs(t, nf.Rejected[0].Err, buildidcache.ErrMismatch)

	for _, d := range res.DSOs {
		if d.Verdict == check.Verified {
			assert.NoError(t, d.Err, d.Path)
		}
	}
}
