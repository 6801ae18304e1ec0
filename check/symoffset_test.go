package check

import (
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// Location.SymOffset is perf script's symoff: for every frame of the
// fixture that perf script names by the same name, the offset into the
// symbol is the one perf prints ("main_spin+0x24"), user and kernel alike
// wherever both can name the kernel.
func TestSymOffsetMatchesPerfScript(t *testing.T) {
	fixtures.NeedTool(t, "perf")
	root := fixtures.SymFS(t)
	data := "../testdata/perf/cshared-fp.data"
	out := fixtures.PerfHome(t, t.TempDir(), "script", "--symfs", root, "-F", "ip,sym,symoff,dso", "-i", data)
	// "\t            11dd main_spin+0x24 (/work/main/.../cshared)"
	re := regexp.MustCompile(`(?m)^\s+([0-9a-f]+) (\S+)\+0x([0-9a-f]+) \((.+)\)$`)
	type key struct {
		dso string
		off uint64
	}
	want := map[key][2]string{}
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		off, err := strconv.ParseUint(m[1], 16, 64)
		require.NoError(t, err)
		want[key{m[4], off}] = [2]string{m[2], m[3]}
	}
	require.NotEmpty(t, want, "perf script printed no sym+0xoff frame:\n%.2000s", out)

	res, err := Analyze(context.Background(), Path(data), Options{Lookup: buildidcache.Options{
		BuildIDDir: t.TempDir(), SymFS: root, DebugDirs: []string{}, DebuginfodURLs: []string{}}})
	require.NoError(t, err)
	same := 0
	for _, l := range res.Locations {
		w, ok := want[key{l.DSO.Path, l.Offset}]
		if !ok || len(l.Frames) == 0 {
			continue
		}
		if n := l.Frames[len(l.Frames)-1]; n.RawName != w[0] && n.Function != w[0] {
			continue // another alias of the address (access, __access)
		}
		same++
		if assert.True(t, l.HasSymOffset, "%s+%#x", l.DSO.Path, l.Offset) {
			assert.Equal(t, w[1], strconv.FormatUint(l.SymOffset, 16), "%s at %s+%#x", w[0], l.DSO.Path, l.Offset)
		}
	}
	assert.Greater(t, same, 10, "locations named as perf names them")
	for _, l := range res.Locations {
		if len(l.Frames) == 0 {
			assert.False(t, l.HasSymOffset, "%s+%#x has a symbol offset but no name", l.DSO.Path, l.Offset)
		}
	}
}
