package buildidcache

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestXZDictionaryBomb: the 120-byte xz stream of four empty blocks that
// each declare a 4 GiB dictionary (built from a real xz stream, see
// fixtures.XZDictBomb), named .ko.xz and reached by every reader that
// recognises xz — the identity reader, ReadModule, ReadModuleIdentity and
// a module lookup at the recorded path — fails at once with an error that
// names the file, while the process's resident memory rises by little:
// each dictionary is capped by what 120 bytes may decompress to.
func TestXZDictionaryBomb(t *testing.T) {
	bomb := fixtures.XZDictBomb(t, 4)
	require.Len(t, bomb, 120)
	name := filepath.Join(t.TempDir(), "bomb.ko.xz")
	require.NoError(t, os.WriteFile(name, bomb, 0o644))

	readers := map[string]func() error{
		"ReadFileIdentity": func() error { _, err := ReadFileIdentity(name); return err },
		"ReadModule": func() error {
			b, _, err := ReadModule(name)
			if err == nil {
				assert.Empty(t, b)
				_, err = ReadIdentity(bytes.NewReader(b), int64(len(b))) // nothing decompressed: no ELF
			}
			return err
		},
		"ReadModuleIdentity": func() error { _, _, err := ReadModuleIdentity(name); return err },
		"Resolve": func() error {
			res, err := New(noNet(t)).Resolve(context.Background(), Query{
				BuildID: buildid.ID{1, 2, 3, 4, 5, 6, 7, 8}, Kind: dso.Module, Path: name})
			require.Nil(t, res)
			var nf *NotFoundError
			require.ErrorAs(t, err, &nf)
			require.Len(t, nf.Rejected, 1)
			assert.NotErrorIs(t, nf.Rejected[0].Err, ErrNoBuildID)
			return nf.Rejected[0].Err
		},
	}
	for what, read := range readers {
		t.Run(what, func(t *testing.T) {
			var err error
			start := time.Now()
			rise := fixtures.PeakRSS(t, func() { err = read() })
			require.Error(t, err)
			if what != "ReadModule" {
				assert.Contains(t, err.Error(), name)
			}
			t.Logf("resident memory rose by %d KiB", rise>>10)
			assert.Less(t, rise, int64(64<<20), "resident memory rose by %d MiB", rise>>20)
			assert.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

// TestCompressedOnlyForModules: an xz-compressed copy of the right binary
// (xz(1) of a binary built here) at a user binary's recorded path is a
// rejected candidate — a process maps the ELF file itself, never a
// compressed one — with a reason, not a file without a build-id; for a
// kernel module the same file verifies.
func TestCompressedOnlyForModules(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	id := mustID(t, prog)
	b, err := os.ReadFile(prog)
	require.NoError(t, err)
	xzName := filepath.Join(dir, "prog.xz")
	require.NoError(t, os.WriteFile(xzName, fixtures.XZ(t, b), 0o644))

	_, err = New(noNet(t)).Resolve(context.Background(), Query{BuildID: id.BuildID, Path: xzName})
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Len(t, nf.Rejected, 1)
	assert.ErrorIs(t, nf.Rejected[0].Err, ErrNotELF)
	assert.Contains(t, nf.Rejected[0].Reason(), "xz-compressed")

	res, err := New(noNet(t)).Resolve(context.Background(), Query{BuildID: id.BuildID, Path: xzName, Kind: dso.Module})
	require.NoError(t, err)
	assert.Equal(t, "xz", res.Identity.Compression)
}
