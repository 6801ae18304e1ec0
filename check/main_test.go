package check

import (
	"os"
	"testing"

	"github.com/perfcheck/perfcheck/buildidcache"
)

// TestMain points the default lookup (a zero Options.Lookup) at an empty
// perf cache and no debuginfod server, so that what this machine's
// ~/.debug or environment holds cannot change a verdict a test expects.
// Tests that mean a cache say so in Options.Lookup.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "check-test-cache")
	if err != nil {
		panic(err)
	}
	os.Setenv("PERF_BUILDID_DIR", dir)
	os.Unsetenv("DEBUGINFOD_URLS")
	// A debuginfod download made with no cache of the test's own must not
	// fill the user's ~/.cache/debuginfod_client.
	dcache, err := os.MkdirTemp("", "check-test-debuginfod")
	if err != nil {
		panic(err)
	}
	os.Setenv("DEBUGINFOD_CACHE_PATH", dcache)
	code := m.Run()
	os.RemoveAll(dir)
	os.RemoveAll(dcache)
	os.Exit(code)
}

// isolated is a lookup in the perf cache dir alone (and the recorded
// path): no debug directory, no debuginfod.
func isolated(dir string) buildidcache.Options {
	return buildidcache.Options{BuildIDDir: dir, DebugDirs: []string{}, DebuginfodURLs: []string{}}
}

// newTestSession is newSession with the locator Analyze would give it: a
// Resolver built from opts.Lookup (closed when the test ends), or
// opts.Resolver.
func newTestSession(t testing.TB, opts Options) *session {
	if opts.locator == nil {
		r := opts.Resolver
		if r == nil {
			r = buildidcache.New(opts.Lookup)
			t.Cleanup(func() { r.Close() })
		}
		opts.locator = &resolverLocator{r: r}
	}
	return newSession(opts)
}
