package check

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// The file at the recorded path stands for a DSO's program headers only
// when it carries the recorded build-id, allowing for perf's zero padding
// to 20 bytes: a file whose build-id merely begins with the recorded one
// is another build.
func TestCodeFileCandidatesBuildID(t *testing.T) {
	t.Parallel()
	bin := fixtures.BuildC(t, t.TempDir(), "prog", "-Wl,--build-id=0x0102030405060708aabb")
	id := buildid.ID{1, 2, 3, 4, 5, 6, 7, 8, 0xaa, 0xbb}
	for _, c := range []struct {
		name string
		rec  buildid.ID
		want bool
	}{
		{"equal", id, true},
		{"padded", append(append(buildid.ID(nil), id...), make([]byte, 10)...), true},
		{"a prefix", id[:8], false},
		{"another", buildid.ID{1, 2, 3, 4, 5, 6, 7, 8, 0xaa, 0xbc}, false},
	} {
		d := &DSO{Path: bin, Kind: dso.File, BuildID: c.rec}
		got := slices.Contains(codeFileCandidates(d, &Options{}), bin)
		if got != c.want {
			t.Errorf("recorded build-id %s (%s): file with %s a candidate: %v, want %v", c.rec, c.name, id, got, c.want)
		}
	}
}

// A binary without a build-id, stripped of its symbols, with a
// .gnu_debuglink to a debug file kept in a debug directory given to the
// lookup: the check names its frames from that file, found where
// --debug-dir says (under D/<the binary's directory>/), as it finds
// binaries; a lookup without that directory leaves them unnamed.
func TestRealDebugLinkInLookupDebugDir(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("busy")
	w.gcc(bin, busyV1, "-Wl,--build-id=none")
	w.run(nil, "objcopy", "--only-keep-debug", bin, bin+".debug")
	w.run(nil, "objcopy", "--strip-all", "--add-gnu-debuglink="+bin+".debug", bin, bin+".stripped")
	require.NoError(t, os.Rename(bin+".stripped", bin))
	data := w.record("debuglink.data", nil, bin, "20000000")
	debugDir := t.TempDir()
	linked := filepath.Join(debugDir, filepath.Dir(bin), "busy.debug")
	require.NoError(t, os.MkdirAll(filepath.Dir(linked), 0o755))
	require.NoError(t, os.Rename(bin+".debug", linked))

	// Analyze's own symbol opener, not the tests' shared one.
	analyze := func(lookup buildidcache.Options) *Result {
		res, err := Analyze(context.Background(), Path(data), Options{Lookup: lookup})
		require.NoError(t, err)
		mustDSO(t, res, bin, Unverified)
		return res
	}
	assertName(t, analyze(buildidcache.Options{BuildIDDir: "-", DebugDirs: []string{debugDir}, DebuginfodURLs: []string{}}), "first_hot")
	assertNoName(t, analyze(isolated("-")), "first_hot", "second_hot")
}
