package buildidcache

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPruneMaxSizeZero: a maximum size of 0 empties the cache; a negative
// one (NoSizeLimit) removes nothing for size.
func TestPruneMaxSizeZero(t *testing.T) {
	dir := t.TempDir()
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	for _, name := range []string{"a", "b"} {
		_, err := c.Add(buildC(t, dir, name, "-Wl,--build-id", "-DTAG=\""+name+"\""))
		require.NoError(t, err)
	}
	rep, err := c.Prune(NoSizeLimit, 0, time.Now(), false)
	require.NoError(t, err)
	assert.Empty(t, rep.Removed)
	rep, err = c.Prune(0, 0, time.Now(), false)
	require.NoError(t, err)
	assert.Len(t, rep.Removed, 2)
	assert.Zero(t, rep.SizeAfter)
	l, err := c.List()
	require.NoError(t, err)
	assert.Empty(t, l)
}

// TestPruneCountsTemps: the temporary file of an interrupted cache fill —
// 8 MiB of data under the name a copy writes to, in an entry's directory —
// counts in the cache's size at once, so entries make room for it, and is
// removed once nothing changed it for ten minutes, not an hour; a fresh
// one (a write in progress) is kept.
func TestPruneCountsTemps(t *testing.T) {
	dir := t.TempDir()
	c := &Cache{Dir: filepath.Join(dir, "cache"), DebugDirs: []string{}}
	e, err := c.Add(buildC(t, dir, "a", "-Wl,--build-id"))
	require.NoError(t, err)
	tmp := filepath.Join(e.Dir, ".elf"+tmpMarker+"0123456789ab")
	data := make([]byte, 8<<20)
	rand.Read(data)
	require.NoError(t, os.WriteFile(tmp, data, 0o644))
	l, err := c.List()
	require.NoError(t, err)
	require.Len(t, l, 1)
	entrySize := l[0].Size

	// Fresh: counted, so the one entry goes to keep the cache within its
	// own size; the temporary file stays.
	rep, err := c.Prune(entrySize, 0, time.Now(), true)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, rep.SizeBefore, entrySize+8<<20)
	assert.Len(t, rep.Removed, 1, "the temporary file's 8 MiB were not counted")
	assert.Zero(t, rep.StaleTemps)

	// Eleven minutes later it is abandoned: removed, and no entry need go.
	later := time.Now().Add(11 * time.Minute)
	rep, err = c.Prune(entrySize, 0, later, false)
	require.NoError(t, err)
	assert.Empty(t, rep.Removed)
	assert.Equal(t, 1, rep.StaleTemps)
	assert.Equal(t, entrySize, rep.SizeAfter)
	_, err = os.Stat(tmp)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
