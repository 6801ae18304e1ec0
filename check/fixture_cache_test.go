package check

import (
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/buildidcache"
)

// fixtureCache returns a perf build-id cache holding the programs the
// committed recordings of testdata/perf profiled, as a deploy pipeline's
// `perfcheck cache add` would have kept them. perf saw them under
// /work/main/testdata/perf/bin (docs/fixtures.md); tests that expect them
// verified use this cache so they do not depend on where the repository is
// checked out (CI clones it elsewhere; on the recording machine the old
// path would still answer and hide the dependency).
func fixtureCache(t *testing.T) string {
	t.Helper()
	c := &buildidcache.Cache{Dir: t.TempDir(), DebugDirs: []string{t.TempDir()}}
	for _, name := range []string{"cshared", "libhot.so", "forkparent", "forkchild", "goprog"} {
		if _, err := c.Add(filepath.Join("../testdata/perf/bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	return c.Dir
}
