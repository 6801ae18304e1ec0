package symbolize

import (
	"debug/elf"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// DataSymbol names every sized data object of a binary at each of its
// bytes' addresses, as perf names a data address, while Symbol, which
// names code, still names none of them.
func TestDataSymbolNamesObjects(t *testing.T) {
	t.Parallel()
	p := filepath.Join("..", "testdata", "perf", "bin", "cshared")
	ef, err := elf.Open(p)
	require.NoError(t, err)
	syms, err := ef.Symbols()
	require.NoError(t, err)
	ef.Close()
	b, err := Open(p, Options{})
	require.NoError(t, err)
	defer b.Close()

	objects := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_OBJECT || s.Size == 0 || s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE {
			continue
		}
		objects++
		for _, addr := range []uint64{s.Value, s.Value + s.Size - 1} {
			name, start, ok := b.DataSymbol(addr)
			require.True(t, ok, "%s at %#x", s.Name, addr)
			// An alias at the same address may be the one chosen.
			assert.Equal(t, s.Value, start, "%s at %#x: named %s", s.Name, addr, name)
			if n, _, _, ok := b.Symbol(addr); ok {
				assert.NotEqual(t, s.Name, n, "Symbol names data object %s", s.Name)
			}
		}
	}
	require.Positive(t, objects, "no data object in %s: the test proves nothing", p)

	// Code is named alike by both.
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || s.Value == 0 {
			continue
		}
		want, wstart, _, ok := b.Symbol(s.Value)
		require.True(t, ok, s.Name)
		got, start, ok := b.DataSymbol(s.Value)
		require.True(t, ok, s.Name)
		assert.Equal(t, want, got)
		assert.Equal(t, wstart, start)
	}
}
