package check

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
)

// absentID is a build-id no file here has.
var absentID = buildid.ID{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// TestResolverLookupNotFound checks that a failed lookup keeps its cause:
// errors.Is finds buildidcache.ErrNotFound, and errors.As the
// *buildidcache.NotFoundError with what was tried and rejected.
func TestResolverLookupNotFound(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	r := buildidcache.New(isolated(t.TempDir()))
	defer r.Close()

	// The test binary is at the recorded path, with another build-id (or
	// none): a rejected candidate.
	_, err = (&resolverLocator{r: r}).Locate(context.Background(),
		buildidcache.Query{Path: exe, Kind: dso.File, BuildID: absentID})
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

// A file neither in the cache nor at its path is not found.
func TestResolverLookupAbsent(t *testing.T) {
	t.Parallel()
	r := buildidcache.New(isolated(t.TempDir()))
	defer r.Close()
	loc := &resolverLocator{r: r}
	_, err := loc.Locate(context.Background(), buildidcache.Query{Path: "/nonexistent/prog", Kind: dso.File, BuildID: absentID})
	assert.ErrorIs(t, err, buildidcache.ErrNotFound)
}
