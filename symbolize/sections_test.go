package symbolize

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompressedSectionErrors decompresses hand-made streams of a section
// and checks that each failure wraps both ErrMalformed and its cause, and
// names the section: a stream cut short (io.ErrUnexpectedEOF), one longer
// than the header says nothing of (the declared size is what is read), a
// bad zlib header (zlib.ErrHeader) and a stream shorter than declared.
func TestCompressedSectionErrors(t *testing.T) {
	t.Parallel()
	payload := bytes.Repeat([]byte("symbolize "), 1000)
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, err := w.Write(payload)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	s := &elf.Section{SectionHeader: elf.SectionHeader{Name: ".debug_info", Offset: 0}}
	read := func(stream []byte, size uint64) ([]byte, error) {
		c := compressed{typ: elf.COMPRESS_ZLIB, size: size, n: int64(len(stream))}
		return c.read(bytes.NewReader(stream), s)
	}

	got, err := read(z.Bytes(), uint64(len(payload)))
	require.NoError(t, err)
	assert.Equal(t, payload, got)

	for _, c := range []struct {
		name   string
		stream []byte
		size   uint64
		cause  error
	}{
		{"cut short", z.Bytes()[:z.Len()/2], uint64(len(payload)), io.ErrUnexpectedEOF},
		{"bad header", append([]byte{0x00, 0x00}, z.Bytes()[2:]...), uint64(len(payload)), zlib.ErrHeader},
		{"shorter than declared", z.Bytes(), uint64(len(payload)) + 10, io.ErrUnexpectedEOF},
	} {
		_, err := read(c.stream, c.size)
		require.Error(t, err, c.name)
		assert.ErrorIs(t, err, ErrMalformed, c.name)
		assert.ErrorIs(t, err, c.cause, c.name)
		assert.Contains(t, err.Error(), ".debug_info", c.name)
	}
	_, err = readSized(bytes.NewReader(nil), 1<<40, 16)
	assert.True(t, errors.Is(err, io.ErrUnexpectedEOF), "a size no data backs: %v", err)
}

// TestReadSizedBounded checks that readSized allocates no more than the
// data justifies: a declared size far above the data costs the data and
// a chunk or two at most. Not parallel: it reads the process's allocation
// count.
func TestReadSizedBounded(t *testing.T) {
	data := bytes.Repeat([]byte{1}, 3*readChunk/2)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := readSized(bytes.NewReader(data), 1<<36, 4096)
	runtime.ReadMemStats(&after)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Len(t, got, len(data))
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(6*readChunk), "bytes allocated reading %d bytes declared as 64 GiB", len(data))
}
