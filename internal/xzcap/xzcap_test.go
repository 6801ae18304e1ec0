package xzcap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os/exec"
	"runtime"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ulikunitz/xz"
)

// sample is text that compresses as symbol tables do.
func sample(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "function_%d_%x\x00", i%977, i*2654435761)
	}
	return b.Bytes()[:n]
}

// compressWith compresses data with ulikunitz/xz and a dictionary of
// dict bytes, which the stream declares whatever the data's size.
func compressWith(t *testing.T, data []byte, dict int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := xz.WriterConfig{DictCap: dict}.NewWriter(&buf)
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func readAll(t *testing.T, src []byte) ([]byte, Sizes, error) {
	t.Helper()
	r, sz, err := NewReader(src)
	if err != nil {
		return nil, sz, err
	}
	out, err := io.ReadAll(r)
	return out, sz, err
}

// TestCapsDictionary reads a stream that declares an 8 MiB dictionary
// for 100 KB: the same bytes come out, with a dictionary the size of the
// data, and the source is left alone.
func TestCapsDictionary(t *testing.T) {
	data := sample(100_000)
	src := compressWith(t, data, 8<<20)
	orig := bytes.Clone(src)
	out, sz, err := readAll(t, src)
	require.NoError(t, err)
	assert.Equal(t, data, out)
	assert.Equal(t, int64(len(data)), sz.Data)
	assert.GreaterOrEqual(t, sz.Dict, int64(len(data)))
	assert.Less(t, sz.Dict, int64(2*len(data)))
	assert.Equal(t, orig, src)
}

// TestXZTool reads what the xz command writes: several blocks, every
// check type, two streams with stream padding between them.
func TestXZTool(t *testing.T) {
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("xz not installed")
	}
	data := sample(300_000)
	var all, want []byte
	for _, check := range []string{"none", "crc32", "crc64", "sha256"} {
		cmd := exec.Command("xz", "-6", "--block-size=70000", "-C", check, "-c")
		cmd.Stdin = bytes.NewReader(data)
		src, err := cmd.Output()
		require.NoError(t, err)
		out, sz, err := readAll(t, src)
		require.NoError(t, err, check)
		assert.Equal(t, data, out, check)
		assert.Less(t, sz.Dict, int64(1<<20), check)
		all = append(append(all, src...), 0, 0, 0, 0)
		want = append(want, data...)
	}
	out, sz, err := readAll(t, all)
	require.NoError(t, err)
	assert.Equal(t, want, out)
	assert.Equal(t, int64(len(want)), sz.Data)
}

// TestDictBomb reads four empty blocks that each declare a 4 GiB
// dictionary: nothing comes out, and reading costs kilobytes.
func TestDictBomb(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, sz, err := readAll(t, fixtures.XZDictBomb(t, 4))
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Empty(t, out)
	assert.Equal(t, Sizes{Data: 0, Dict: 4096}, sz)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20))
}

// TestLyingIndex gives a stream whose index declares fewer bytes than its
// block holds (the index's CRC recomputed): reading fails, whether the
// smaller dictionary or the size limit catches it.
func TestLyingIndex(t *testing.T) {
	data := sample(100_000)
	src := compressWith(t, data, 8<<20)
	w := walker{b: src}
	require.NoError(t, w.stream())
	// The index follows the only block: its header, data and padding
	// to 4 bytes, then the check (CRC-64, ulikunitz's default).
	b := w.blocks[0]
	idx := b.hdr + int((b.unpadded-8+3)&^3) + 8
	require.Equal(t, []byte{0, 1}, src[idx:idx+2], "index indicator and count")
	iw := walker{b: src, pos: idx + 2}
	_, _ = iw.vli() // unpadded size
	at := iw.pos
	size, _ := iw.vli()
	require.Equal(t, int64(len(data)), size)
	require.Equal(t, 3, iw.pos-at, "a 3-byte size")
	// Replace it by the 3-byte VLI of 20000, and the index's CRC.
	const v = 20000
	lie := bytes.Clone(src)
	copy(lie[at:], []byte{0x80 | v&0x7f, 0x80 | v>>7&0x7f, v >> 14})
	end := len(lie) - 12
	binary.LittleEndian.PutUint32(lie[end-4:], crc32.ChecksumIEEE(lie[idx:end-4]))
	_, _, err := readAll(t, lie)
	require.Error(t, err)
}

// TestMalformed cuts and corrupts a real stream: an error, never a
// panic, and never more than the index declares.
func TestMalformed(t *testing.T) {
	src := compressWith(t, sample(5_000), 1<<20)
	for n := 0; n < len(src); n += 7 {
		_, _, err := readAll(t, src[:n])
		assert.Error(t, err, "cut at %d", n)
	}
	for i := 0; i < len(src); i += 3 {
		bad := bytes.Clone(src)
		bad[i] ^= 0x55
		out, sz, err := readAll(t, bad)
		if err == nil {
			assert.LessOrEqual(t, int64(len(out)), sz.Data)
		}
	}
}

// FuzzNewReader reads arbitrary bytes: an error or at most what the
// index declares, never a panic, and never a dictionary larger than the
// data needs.
func FuzzNewReader(f *testing.F) {
	f.Add(fixtures.XZDictBomb(f, 1))
	var buf bytes.Buffer
	w, _ := xz.WriterConfig{DictCap: 1 << 20}.NewWriter(&buf)
	w.Write(sample(2000))
	w.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, src []byte) {
		r, sz, err := NewReader(src)
		if err != nil {
			return
		}
		if sz.Dict > max(2*sz.Data, 4096) {
			t.Fatalf("dictionary %d for %d bytes", sz.Dict, sz.Data)
		}
		out, err := io.ReadAll(io.LimitReader(r, 1<<20))
		if err == nil && int64(len(out)) > sz.Data {
			t.Fatalf("%d bytes, the index declares %d", len(out), sz.Data)
		}
	})
}
