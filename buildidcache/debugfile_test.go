package buildidcache

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDebugFile finds a binary's separate debug file where Resolve's
// debug-directory step looks, in the Resolver's own debug directories: by
// build-id (passing over a file there with another build-id), by the
// recorded path (the binary's path with SymFS taken off), and not at all,
// with ErrNotFound (a debuglink that is not a base name is not followed).
func TestDebugFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, dbg := debugPair(t, dir)
	id := mustID(t, bin)
	other := mustID(t, buildC(t, dir, "other", "-Wl,--build-id"))
	require.False(t, other.BuildID.Matches(id.BuildID))
	place := func(src, dst string) string {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, b, 0o644))
		return dst
	}
	hexID := id.BuildID.String()
	byID := func(d string) string { return filepath.Join(d, ".build-id", hexID[:2], hexID[2:]+".debug") }

	t.Run("build-id", func(t *testing.T) {
		wrong, right := t.TempDir(), t.TempDir()
		place(filepath.Join(dir, "other"), byID(wrong))
		want := place(dbg, byID(right))
		opts := noNet(t)
		opts.DebugDirs = []string{wrong, right}
		got, err := New(opts).DebugFile(bin, id.BuildID, "")
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("under-symfs", func(t *testing.T) {
		symfs, d := t.TempDir(), t.TempDir()
		onHost := place(bin, filepath.Join(symfs, "opt", "app", "prog"))
		want := place(dbg, filepath.Join(d, "opt", "app", "prog.debug"))
		opts := noNet(t)
		opts.SymFS, opts.DebugDirs = symfs, []string{d}
		got, err := New(opts).DebugFile(onHost, nil, "prog.debug")
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("none", func(t *testing.T) {
		opts := noNet(t)
		opts.DebugDirs = []string{t.TempDir()}
		_, err := New(opts).DebugFile(bin, id.BuildID, "../prog.debug")
		assert.ErrorIs(t, err, ErrNotFound)
	})
}
