package check_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/check"
)

// A caller's Resolver with its own SymFS, and Options.Lookup left zero:
// the recorded paths are judged under that SymFS, where the Resolver
// looked, not on this host. Here the file under the root at libhot.so's
// recorded path is another binary, while the host's path may hold the
// right one.
func TestResolverSymFSJudgesPaths(t *testing.T) {
	symfs, at := otherLibUnderSymFS(t)
	otherID, err := buildidcache.ReadFileIdentity(at)
	require.NoError(t, err)

	r := buildidcache.New(buildidcache.Options{BuildIDDir: t.TempDir(), DebugDirs: []string{}, DebuginfodURLs: []string{}, SymFS: symfs})
	defer r.Close()
	assert.Equal(t, symfs, r.SymFS())
	res, err := check.Analyze(context.Background(), check.Path("../testdata/perf/cshared-fp.data"), check.Options{Resolver: r, NoSymbols: true})
	require.NoError(t, err)
	lib := recordedLibDSO(t, res)
	assert.Equal(t, check.Mismatch, lib.Verdict, lib.Reason)
	assert.Equal(t, at, lib.FoundPath)
	assert.Equal(t, otherID.BuildID, lib.FoundBuildID)
}
