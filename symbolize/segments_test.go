package symbolize

import (
	"debug/elf"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
)

// The PT_LOAD segments as debug/elf lists them, from an open Binary and
// from ReadSegments alike; ReadSegments checks the build-id asked for on
// the file it reads.
func TestSegments(t *testing.T) {
	t.Parallel()
	const lib = "../testdata/perf/bin/libhot.so"
	ef, err := elf.Open(lib)
	require.NoError(t, err)
	defer ef.Close()
	var want []Segment
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			want = append(want, Segment{Off: p.Off, Filesz: p.Filesz, Vaddr: p.Vaddr, Exec: p.Flags&elf.PF_X != 0})
		}
	}
	require.NotEmpty(t, want)

	b, err := Open(lib, Options{})
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, want, b.Segments())

	got, err := ReadSegments(lib, b.BuildID())
	require.NoError(t, err)
	assert.Equal(t, want, got)

	other, err := buildidcache.ReadFileIdentity("../testdata/perf/bin/cshared")
	require.NoError(t, err)
	_, err = ReadSegments(lib, other.BuildID)
	assert.ErrorIs(t, err, buildidcache.ErrMismatch)

	k, err := OpenKallsyms(strings.NewReader("ffffffff81000000 T _text\n"), "k", Options{})
	require.NoError(t, err)
	assert.Empty(t, k.Segments(), "a symbol list has no segments")
}
