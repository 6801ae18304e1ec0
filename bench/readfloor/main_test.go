package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/perfcheck/perfcheck/perfdata"
)

// TestDecompress checks that readfloor -z decompresses what perfdata does:
// the same compressed records, and exactly the bytes of the records that
// came out of them, on file-mode and pipe-mode recordings made with
// perf record -z (COMPRESSED, and COMPRESSED2 in the corpus's).
func TestDecompress(t *testing.T) {
	t.Parallel()
	files := []string{"../../testdata/perf/zstd.data", "../../testdata/perf/zstd-pipe.data"}
	for _, name := range []string{
		"modern/sleep.compressed.data", "modern/sleep.compressed.pipe.data",
		"modern/sleep.compressed2.data", "modern/sleep.compressed2.pipe.data",
		"modern/fibo.compressed2.pipe.data",
		"foreign/perfparser--parallel_static_gcc_perf.data.zstd",
	} {
		files = append(files, filepath.Join(fixtures.CorpusDir(), filepath.FromSlash(name)))
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			t.Parallel()
			if _, err := os.Stat(p); err != nil {
				t.Skipf("%v: the corpus lives outside the repository", err)
			}
			f, err := os.Open(p)
			require.NoError(t, err)
			defer f.Close()
			w := &walker{f: f, buf: make([]byte, 1<<20)}
			out, err := w.decompress()
			require.NoError(t, err)
			require.NoError(t, w.drain())
			fi, err := f.Stat()
			require.NoError(t, err)
			require.Equal(t, fi.Size(), w.read, "bytes read")

			records, size := perfdataCompressed(t, p)
			require.Positive(t, records)
			require.Equal(t, records, w.compressed, "compressed records")
			require.Equal(t, size, out, "decompressed bytes")
		})
	}
}

// perfdataCompressed returns how many compressed records perfdata reads in
// the file at p and the total size of the records that came out of them.
func perfdataCompressed(t *testing.T, p string) (records int, size int64) {
	f, err := perfdata.Open(p)
	require.NoError(t, err)
	defer f.Close()
	rs := f.Records(perfdata.RecordsOptions{})
	for rs.Next() {
		h := rs.Record().Header()
		if h.RecType == perfdata.RecordCompressed || h.RecType == perfdata.RecordCompressed2 {
			records++
		}
		if h.Compressed {
			size += int64(h.Size)
		}
	}
	require.NoError(t, rs.Err())
	return records, size
}
