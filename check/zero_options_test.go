package check

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// A zero Options looks binaries up where `perfcheck check` does: here, in
// the perf cache $PERF_BUILDID_DIR names.
func TestZeroOptionsPerfCache(t *testing.T) {
	t.Setenv("PERF_BUILDID_DIR", fixtureCache(t))
	t.Setenv("DEBUGINFOD_URLS", "")
	res, err := Analyze(context.Background(), Path("../testdata/perf/cshared-fp.data"), Options{NoSymbols: true})
	require.NoError(t, err)
	for _, name := range []string{"cshared", "libhot.so"} {
		d := dsoNamed(t, res, name)
		assert.Equal(t, Verified, d.Verdict, "%s: %s", d.Path, d.Reason)
		assert.Equal(t, "perf-cache", d.Source, d.Path)
	}
}

// A zero Options asks the servers of $DEBUGINFOD_URLS (here the real
// elfutils debuginfod over the fixtures' binaries) before the recorded
// path.
func TestZeroOptionsDebuginfod(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", home)
	t.Setenv("DEBUGINFOD_CACHE_PATH", "")
	t.Setenv("PERF_BUILDID_DIR", t.TempDir())
	const cshared = "ad8b5c79a49d3fe78a633a20251339808292bf79" // testdata/perf/cshared-fp.data.buildid-list
	t.Setenv("DEBUGINFOD_URLS", fixtures.Debuginfod(t, "../testdata/perf/bin", cshared))
	res, err := Analyze(context.Background(), Path("../testdata/perf/cshared-fp.data"), Options{})
	require.NoError(t, err)
	d := dsoNamed(t, res, "cshared")
	assert.Equal(t, Verified, d.Verdict, d.Reason)
	assert.Equal(t, "debuginfod", d.Source)
	assert.True(t, d.Symbolized)
}

// dsoNamed is the DSO of res whose path ends in /name.
func dsoNamed(t *testing.T, res *Result, name string) *DSO {
	t.Helper()
	for _, d := range res.DSOs {
		if len(d.Path) > len(name) && d.Path[len(d.Path)-len(name)-1:] == "/"+name {
			return d
		}
	}
	require.FailNow(t, "no DSO "+name)
	return nil
}
