package buildidcache

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// diskBytes is the space a file takes on disk (st_blocks).
func diskBytes(t *testing.T, name string) int64 {
	t.Helper()
	st, err := os.Stat(name)
	require.NoError(t, err)
	return fixtures.DiskBytes(st)
}

func srcSize(t *testing.T, name string) int64 {
	t.Helper()
	st, err := os.Stat(name)
	require.NoError(t, err)
	return st.Size()
}

// TestAddSparseAndTrailing: cache add copies only what an ELF file's
// headers describe, and holes as holes. Each hostile file is built from a
// real binary:
//   - trailing-hole: the binary extended to 3 GiB with truncate, 20 KB
//     on disk that a copy of the whole extent would make 3 GB in the cache;
//   - trailing-data: the binary followed by 1 MiB of bytes;
//   - inner-hole: the binary's section header table moved to 3 GiB, past
//     a hole (e_shoff rewritten), so that the headers themselves describe
//     3 GiB of which a few kilobytes hold data.
//
// Every copy keeps the build-id, and costs the cache about the binary.
func TestAddSparseAndTrailing(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "prog", "-Wl,--build-id")
	orig, err := os.ReadFile(prog)
	require.NoError(t, err)
	id := mustID(t, prog)
	const big = 3 << 30

	builds := map[string]func(name string) int64{ // returns the copy's expected size
		"trailing-hole": func(name string) int64 {
			require.NoError(t, os.WriteFile(name, orig, 0o755))
			require.NoError(t, os.Truncate(name, big))
			return int64(len(orig))
		},
		"trailing-data": func(name string) int64 {
			require.NoError(t, os.WriteFile(name, append(bytes.Clone(orig), bytes.Repeat([]byte{0xa5}, 1<<20)...), 0o755))
			return int64(len(orig))
		},
		"inner-hole": func(name string) int64 {
			// ELF64: e_shoff at 40, e_shentsize at 58, e_shnum at 60.
			shoff := binary.LittleEndian.Uint64(orig[40:])
			table := int64(binary.LittleEndian.Uint16(orig[58:])) * int64(binary.LittleEndian.Uint16(orig[60:]))
			require.Equal(t, int64(len(orig)), int64(shoff)+table, "section headers are not last")
			moved := int64(big) - table
			b := bytes.Clone(orig[:shoff])
			binary.LittleEndian.PutUint64(b[40:], uint64(moved))
			f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
			require.NoError(t, err)
			_, err = f.Write(b)
			require.NoError(t, err)
			_, err = f.WriteAt(orig[shoff:], moved)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			return big
		},
	}
	for what, build := range builds {
		t.Run(what, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "prog")
			want := build(src)
			require.Equal(t, id.BuildID, mustID(t, src).BuildID, "the hostile file keeps the build-id")
			require.Less(t, diskBytes(t, src), int64(len(orig))+4<<20, "the test's file is not sparse")

			c := &Cache{Dir: filepath.Join(t.TempDir(), ".debug"), DebugDirs: []string{}}
			e, err := c.Add(src)
			require.NoError(t, err)
			elf := filepath.Join(e.Dir, "elf")
			st, err := os.Stat(elf)
			require.NoError(t, err)
			t.Logf("source %d bytes apparent, %d on disk; copy %d apparent, %d on disk",
				srcSize(t, src), diskBytes(t, src), st.Size(), diskBytes(t, elf))
			assert.Equal(t, want, st.Size(), "apparent size of the copy")
			assert.Less(t, diskBytes(t, elf), int64(len(orig))+1<<20, "disk space of the copy")
			assert.Equal(t, id.BuildID, mustID(t, elf).BuildID)
			if what != "inner-hole" {
				got, err := os.ReadFile(elf)
				require.NoError(t, err)
				assert.True(t, bytes.Equal(orig, got), "the copy is the binary")
			}
		})
	}
}
