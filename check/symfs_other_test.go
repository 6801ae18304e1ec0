package check_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/check"
)

// recordedLib is libhot.so's path as cshared-fp.data maps it.
const recordedLib = "/work/main/testdata/perf/bin/libhot.so"

// otherLibUnderSymFS makes a --symfs root whose file at libhot.so's
// recorded path is another binary (the fixture's cshared), and returns
// the root and that file.
func otherLibUnderSymFS(t *testing.T) (symfs, at string) {
	t.Helper()
	symfs = t.TempDir()
	at = filepath.Join(symfs, recordedLib)
	require.NoError(t, os.MkdirAll(filepath.Dir(at), 0o755))
	other, err := os.ReadFile("../testdata/perf/bin/cshared")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(at, other, 0o755))
	return symfs, at
}

// recordedLibDSO is res's DSO for libhot.so.
func recordedLibDSO(t *testing.T, res *check.Result) *check.DSO {
	t.Helper()
	for _, d := range res.DSOs {
		if d.Path == recordedLib {
			return d
		}
	}
	require.FailNow(t, "no DSO "+recordedLib)
	return nil
}
