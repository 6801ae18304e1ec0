package buildidcache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/buildid"
)

// OpenVerified checks the build-id on the file it opened: the one asked
// for (or its zero-padded form, as perf before 5.9 stored it) is opened;
// another one, or none, is a *MismatchError naming both.
func TestOpenVerified(t *testing.T) {
	t.Parallel()
	const lib = "../testdata/perf/bin/libhot.so"
	ident, err := ReadFileIdentity(lib)
	require.NoError(t, err)
	id := ident.BuildID
	require.NotEmpty(t, id)

	for _, want := range []buildid.ID{nil, id, append(append(buildid.ID{}, id...), make([]byte, 20-len(id)%20)...)} {
		f, err := OpenVerified(lib, want)
		require.NoError(t, err, "want %s", want)
		f.Close()
	}

	other := make(buildid.ID, len(id))
	copy(other, id)
	other[0] ^= 0xff
	_, err = OpenVerified(lib, other)
	var me *MismatchError
	require.ErrorAs(t, err, &me)
	assert.ErrorIs(t, err, ErrMismatch)
	assert.Equal(t, &MismatchError{File: lib, Got: id, Want: other}, me)
	assert.Equal(t, lib+": build-id "+id.String()+", not "+other.String(), err.Error())

	// The same image with its build-id note retyped: no build-id.
	b, err := os.ReadFile(lib)
	require.NoError(t, err)
	note := append([]byte{4, 0, 0, 0, byte(len(id)), 0, 0, 0, 3, 0, 0, 0}, "GNU\x00"...)
	i := bytes.Index(b, note)
	require.GreaterOrEqual(t, i, 0, "the GNU build-id note")
	b[i+8] = 0x7f
	got, err := ImageBuildID("mem", bytes.NewReader(b), int64(len(b)), nil)
	require.NoError(t, err)
	assert.Nil(t, got)
	_, err = ImageBuildID("mem", bytes.NewReader(b), int64(len(b)), id)
	assert.EqualError(t, err, "mem: no build-id, not "+id.String())

	_, err = OpenVerified(filepath.Join(t.TempDir(), "absent"), id)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
