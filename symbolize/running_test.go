package symbolize

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This machine's /proc/kallsyms through the shared parse: the same names
// as Open reading it afresh, and the reference symbols at the first
// address the listing gives them.
func TestOpenRunningKernel(t *testing.T) {
	t.Parallel()
	fresh, err := Open(runningKallsyms, Options{})
	if err != nil {
		t.Skipf("this machine's kallsyms cannot be read: %v", err)
	}
	defer fresh.Close()
	b, err := OpenRunningKernel(Options{})
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, FormatKallsyms, b.Format())
	again, err := OpenRunningKernel(Options{})
	require.NoError(t, err)
	require.NoError(t, again.Close())
	assert.Same(t, b.syms, again.syms, "parsed once")

	refs := firstAddrs(t, "_text", "_stext")
	require.NotZero(t, refs["_text"])
	for name, addr := range refs {
		got, ok := RunningKernelSymbol(name)
		assert.True(t, ok, name)
		assert.Equal(t, addr, got, name)
		fr, err := b.Frames(addr, nil)
		require.NoError(t, err)
		want, err := fresh.Frames(addr, nil)
		require.NoError(t, err)
		assert.Equal(t, want, fr)
	}
	_, ok := RunningKernelSymbol("core_fn")
	assert.False(t, ok, "not a reference symbol")
}

// firstAddrs scans /proc/kallsyms for the first address of each name.
func firstAddrs(t *testing.T, names ...string) map[string]uint64 {
	t.Helper()
	f, err := os.Open(runningKallsyms)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(out) < len(names) {
		fs := strings.Fields(sc.Text())
		for _, n := range names {
			if _, seen := out[n]; len(fs) >= 3 && fs[2] == n && !seen {
				a, err := strconv.ParseUint(fs[0], 16, 64)
				require.NoError(t, err)
				out[n] = a
			}
		}
	}
	require.NoError(t, sc.Err())
	return out
}
