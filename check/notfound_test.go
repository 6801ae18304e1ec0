package check_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/check"
	"github.com/perfcheck/perfcheck/dso"
)

// absentID is a build-id no file here has.
var absentID = buildid.ID{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// TestResolverLocatorNotFound checks that a failed lookup keeps its cause:
// errors.Is finds buildidcache.ErrNotFound, and errors.As the
// *buildidcache.NotFoundError with what was tried and rejected.
func TestResolverLocatorNotFound(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "")
	exe, err := os.Executable()
	require.NoError(t, err)
	r := buildidcache.New(buildidcache.Options{BuildIDDir: t.TempDir(), DebugDirs: []string{}})
	defer r.Close()

	// The test binary is at the recorded path, with another build-id (or
	// none): a rejected candidate.
	_, err = check.NewResolverLocator(r).Locate(context.Background(),
		check.Query{Path: exe, Kind: dso.File, BuildID: absentID})
	require.Error(t, err)
	assert.ErrorIs(t, err, buildidcache.ErrNotFound)
	var nf *buildidcache.NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, absentID, nf.BuildID)
	assert.NotEmpty(t, nf.Tried)
	require.Len(t, nf.Rejected, 1)
	assert.Equal(t, exe, nf.Rejected[0].Path)
	assert.Error(t, nf.Rejected[0].Err)
}

func TestPathLocatorNotFound(t *testing.T) {
	loc := &check.PathLocator{BuildIDDir: t.TempDir()}
	for _, q := range []check.Query{
		{Path: "/nonexistent/prog", Kind: dso.File, BuildID: absentID},
		{Path: "/nonexistent/prog", Kind: dso.File}, // no build-id to look for
	} {
		_, err := loc.Locate(context.Background(), q)
		assert.ErrorIs(t, err, buildidcache.ErrNotFound, "%+v", q)
	}
}
