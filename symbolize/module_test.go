package symbolize

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildidcache"
)

// A module's lines in a kallsyms listing, as /proc/kallsyms shows a
// loaded module: between the core kernel's lines and another module's,
// with a data symbol that ends the last function (kallsyms has no sizes).
func TestReadLoadedModule(t *testing.T) {
	t.Parallel()
	const base uint64 = 0xffffffffc0a1b000
	listing := strings.Join([]string{
		"ffffffff81000000 T _text",
		"ffffffff81001000 T core_fn",
		fmt.Sprintf("%x t mod_second\t[m]", base+0x40),
		fmt.Sprintf("%x T mod_first\t[m]", base+0x10),
		fmt.Sprintf("%x T mod_first_alias\t[m]", base+0x10),
		fmt.Sprintf("%x b msink\t[m]", base+0x1000),
		fmt.Sprintf("%x T past_limit\t[m]", base+0x5000),
		fmt.Sprintf("%x t other_fn\t[other]", base+0x2000),
		fmt.Sprintf("%x t not_four fields\t[m]", base+0x20),
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "kallsyms")
	require.NoError(t, os.WriteFile(path, []byte(listing), 0o644))

	m, err := ReadLoadedModule(path, "m", base, 0x4000)
	require.NoError(t, err)
	assert.Nil(t, m.BuildID())
	for off, want := range map[uint64]string{0x10: "mod_first_alias", 0x3f: "mod_first_alias", 0x40: "mod_second", 0xfff: "mod_second"} {
		fr, err := m.Frames(off, nil)
		require.NoError(t, err, "offset %#x", off)
		assert.Equal(t, []Frame{{Function: want, RawName: want}}, fr, "offset %#x", off)
	}
	name, start, size, ok := m.Symbol(0x50)
	assert.True(t, ok)
	assert.Equal(t, "mod_second", name)
	assert.Equal(t, uint64(0x40), start)
	assert.Equal(t, uint64(0x1000-0x40), size)
	for _, off := range []uint64{0, 0x1000, 0x2000, 0x3fff} {
		_, err := m.Frames(off, nil)
		assert.ErrorIs(t, err, ErrUnknownAddr, "offset %#x", off)
	}

	_, err = ReadLoadedModule(path, "absent", base, 0x4000)
	assert.ErrorContains(t, err, path+" lists no function of [absent]")
}

// A .ko that is not a relocatable object, or another build than the one
// asked for, names nothing, and the error says why.
func TestReadModuleRefuses(t *testing.T) {
	t.Parallel()
	lib := "../testdata/perf/bin/libhot.so"
	_, err := ReadModule(lib, nil, 0x1000, nil)
	assert.ErrorContains(t, err, lib+": not a relocatable module (ET_DYN)")

	id, err := buildidcache.ReadFileIdentity(lib)
	require.NoError(t, err)
	other, err := buildidcache.ReadFileIdentity("../testdata/perf/bin/cshared")
	require.NoError(t, err)
	_, err = ReadModule(lib, nil, 0x1000, other.BuildID)
	var me *buildidcache.MismatchError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, id.BuildID, me.Got)

	// The image passed in is read, not the file at the path.
	b, err := os.ReadFile(lib)
	require.NoError(t, err)
	_, err = ReadModule(filepath.Join(t.TempDir(), "absent.ko"), b, 0x1000, id.BuildID)
	assert.ErrorContains(t, err, "not a relocatable module")

	_, err = ReadModule(filepath.Join(t.TempDir(), "absent.ko"), nil, 0x1000, nil)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
