package check

import (
	"context"
	"debug/elf"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/dso"
)

// A verified binary's executable segment is in the Result, read from the
// file found by build-id; an offset outside it, and a DSO whose offsets
// are addresses, have none.
func TestExecSegment(t *testing.T) {
	t.Parallel()
	res, err := Analyze(context.Background(), Path("../testdata/perf/cshared-fp.data"), withSystemSymbols(Options{Lookup: buildidcache.Options{BuildIDDir: fixtureCache(t)}}))
	require.NoError(t, err)
	ef, err := elf.Open("../testdata/perf/bin/libhot.so")
	require.NoError(t, err)
	defer ef.Close()
	var text *elf.Prog
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			text = p
		}
	}
	require.NotNil(t, text)

	seen := map[dso.Kind]bool{}
	for _, l := range res.Locations {
		d := l.DSO
		off, ok := res.ExecSegment(d, l.Offset)
		switch {
		case d.Path == "/work/main/testdata/perf/bin/libhot.so":
			require.Equal(t, Verified, d.Verdict)
			require.True(t, ok, "%s+%#x", d.Path, l.Offset)
			assert.Equal(t, text.Off, off)
			_, ok = res.ExecSegment(d, text.Off+text.Filesz)
			assert.False(t, ok, "past the segment")
		case d.Kind == dso.Kernel:
			assert.False(t, ok, "kernel offsets are addresses")
		}
		seen[d.Kind] = true
	}
	assert.True(t, seen[dso.Kernel], "the recording has kernel frames")
}
