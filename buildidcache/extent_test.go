package buildidcache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestELFExtentRealFiles: on every real ELF file at hand — the committed
// binaries, the system's executables, libraries, separate debug files and
// Go's tools — the headers account for exactly the file, so a download
// or a cache copy cut at the extent never loses a byte of a real file.
func TestELFExtentRealFiles(t *testing.T) {
	var files []string
	for _, g := range []string{"../testdata/perf/bin/*", "../testdata/symbolize/goprog",
		"/usr/bin/*", "/usr/lib/x86_64-linux-gnu/*.so*", "/usr/lib/debug/.build-id/*/*.debug",
		"/usr/local/go/pkg/tool/linux_amd64/*"} {
		m, err := filepath.Glob(g)
		require.NoError(t, err)
		files = append(files, m...)
	}
	n := 0
	for _, name := range files {
		f, err := OpenRegular(name)
		if err != nil {
			continue
		}
		st, err := f.Stat()
		require.NoError(t, err)
		end, err := elfExtent(f, st.Size(), name)
		f.Close()
		if err != nil {
			continue // not ELF
		}
		n++
		assert.Equal(t, st.Size(), end, name)
	}
	require.NotZero(t, n, "no ELF file found")
	t.Logf("%d ELF files", n)
}

// TestHeaderTablesEnd: the header alone locates the tables of a C binary
// (section headers last) and of a Go binary (section headers first), and
// elfExtent measures either as soon as they are in.
func TestHeaderTablesEnd(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{buildC(t, dir, "prog", "-Wl,--build-id"), buildGo(t, dir, "goprog", nil)} {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		tables, ok, err := headerTablesEnd(b[:64])
		require.NoError(t, err)
		require.True(t, ok)
		require.LessOrEqual(t, tables, int64(len(b)))
		end, err := elfExtent(bytes.NewReader(b[:tables]), tables, name)
		require.NoError(t, err, name)
		assert.Equal(t, int64(len(b)), end, name)
	}
	_, _, err := headerTablesEnd([]byte("\x1f\x8b\x08\x00 gzip, not ELF"))
	assert.ErrorIs(t, err, ErrNotELF)
	_, ok, err := headerTablesEnd([]byte("\x7fEL"))
	assert.NoError(t, err)
	assert.False(t, ok, "three bytes tell nothing yet")
}
