package check

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// libhotOffset is an offset of res's libhot.so that a sample touched.
func libhotOffset(t *testing.T, res *Result, lib *DSO) uint64 {
	t.Helper()
	for _, l := range res.Locations {
		if l.DSO == lib {
			return l.Offset
		}
	}
	require.FailNow(t, "no location in libhot.so")
	return 0
}

// ExecSegment reads the file the verdict judged, or nothing: a file put at
// the found path after the verdict (here another binary with an executable
// segment over the same offset) is refused by its build-id, as when the
// binary has no segments.
func TestExecSegmentFileReplaced(t *testing.T) {
	res, err := Analyze(context.Background(), Path("../testdata/perf/cshared-fp.data"), Options{Lookup: isolated(fixtureCache(t))})
	require.NoError(t, err)
	lib := dsoNamed(t, res, "libhot.so")
	require.Equal(t, Verified, lib.Verdict)
	off := libhotOffset(t, res, lib)

	other, err := os.ReadFile("../testdata/perf/bin/cshared")
	require.NoError(t, err)
	require.NoError(t, os.Remove(lib.FoundPath))
	require.NoError(t, os.WriteFile(lib.FoundPath, other, 0o755))
	_, ok := res.ExecSegment(lib, off)
	assert.False(t, ok, "another binary's segments for %s", lib.FoundPath)
}

// The running vdso has no file: its FoundPath "[vdso]" is a name, never a
// path to open (relative, it would be looked for in the working
// directory), so it has no segments, as before the segments were read
// lazily.
func TestExecSegmentRunningVDSO(t *testing.T) {
	lib, err := os.ReadFile("../testdata/perf/bin/libhot.so")
	require.NoError(t, err)
	id, err := buildidcache.ReadFileIdentity("../testdata/perf/bin/libhot.so")
	require.NoError(t, err)
	t.Chdir(t.TempDir())
	require.NoError(t, os.WriteFile("[vdso]", lib, 0o644))
	d := &DSO{Path: "[vdso]", Kind: dso.VDSO, Verdict: Verified, Source: "running-vdso",
		FoundPath: "[vdso]", FoundBuildID: id.BuildID, BuildID: id.BuildID}
	var res Result
	for off := uint64(0); off < uint64(len(lib)); off += 0x100 {
		_, ok := res.ExecSegment(d, off)
		require.False(t, ok, "segments read from ./[vdso] at %#x", off)
	}
}

// A zero Options closes the Resolver it made when Analyze returns; the
// binaries debuginfod downloaded to its scratch directory (no cache
// directory: no $HOME, $XDG_CACHE_HOME or $DEBUGINFOD_CACHE_PATH) are gone
// then, so their segments are read before: ExecSegment still knows them.
func TestExecSegmentDebuginfodScratch(t *testing.T) {
	t.Setenv("HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("DEBUGINFOD_CACHE_PATH", "")
	t.Setenv("PERF_BUILDID_DIR", t.TempDir())
	srv := t.TempDir()
	b, err := os.ReadFile("../testdata/perf/bin/libhot.so")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(srv, "libhot.so"), b, 0o755))
	id, err := buildidcache.ReadFileIdentity("../testdata/perf/bin/libhot.so")
	require.NoError(t, err)
	t.Setenv("DEBUGINFOD_URLS", fixtures.Debuginfod(t, srv, id.BuildID.String()))
	res, err := Analyze(context.Background(), Path("../testdata/perf/cshared-fp.data"), Options{NoSymbols: true})
	require.NoError(t, err)
	lib := dsoNamed(t, res, "libhot.so")
	require.Equal(t, Verified, lib.Verdict, lib.Reason)
	require.Equal(t, "debuginfod", lib.Source)
	_, err = os.Stat(lib.FoundPath)
	require.ErrorIs(t, err, os.ErrNotExist, "the scratch directory is removed with the Resolver")
	_, ok := res.ExecSegment(lib, libhotOffset(t, res, lib))
	assert.True(t, ok, "segments of %s", lib.FoundPath)
}
