package xz

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os/exec"
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
		fmt.Fprintf(&b, "function_%d_%x\x00", i%977, uint64(i)*2654435761)
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

// readAll measures src and reads it as callers do: with the dictionary
// capped at the declared size, and no more than that size.
func readAll(t *testing.T, src []byte) ([]byte, Sizes, error) {
	t.Helper()
	sz, err := Measure(src)
	if err != nil {
		return nil, sz, err
	}
	out, err := io.ReadAll(io.LimitReader(NewReader(bytes.NewReader(src), sz.Data), sz.Data+1))
	if err == nil && int64(len(out)) > sz.Data {
		err = fmt.Errorf("more than the %d bytes declared", sz.Data)
	}
	return out, sz, err
}

// TestCapsDictionary reads a stream that declares an 8 MiB dictionary
// for 100 KB: the same bytes come out, with a dictionary the size of the
// data.
func TestCapsDictionary(t *testing.T) {
	t.Parallel()
	data := sample(100_000)
	src := compressWith(t, data, 8<<20)
	out, sz, err := readAll(t, src)
	require.NoError(t, err)
	assert.Equal(t, data, out)
	assert.Equal(t, Sizes{Data: int64(len(data)), Dict: int64(len(data))}, sz)
}

// TestXZTool reads what the xz command writes: several blocks, every
// check type, two streams with stream padding between them.
func TestXZTool(t *testing.T) {
	t.Parallel()
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
		assert.LessOrEqual(t, sz.Dict, int64(len(data)), check)
		all = append(append(all, src...), 0, 0, 0, 0)
		want = append(want, data...)
	}
	out, sz, err := readAll(t, all)
	require.NoError(t, err)
	assert.Equal(t, want, out)
	assert.Equal(t, int64(len(want)), sz.Data)
}

// TestLyingIndex gives a stream whose index declares fewer bytes than its
// block holds (the index's CRC recomputed): reading fails, whether the
// smaller dictionary, the size limit or the index check catches it.
func TestLyingIndex(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// FuzzMeasure measures and reads arbitrary bytes: an error or at most
// what the index declares, never a panic, and never a dictionary larger
// than the data needs.
func FuzzMeasure(f *testing.F) {
	f.Add(fixtures.XZDictBomb(f, 1))
	var buf bytes.Buffer
	w, _ := xz.WriterConfig{DictCap: 1 << 20}.NewWriter(&buf)
	w.Write(sample(2000))
	w.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, src []byte) {
		sz, err := Measure(src)
		if err != nil {
			return
		}
		if sz.Dict > max(sz.Data, 4096) {
			t.Fatalf("dictionary %d for %d bytes", sz.Dict, sz.Data)
		}
		out, err := io.ReadAll(io.LimitReader(NewReader(bytes.NewReader(src), sz.Data), sz.Data+1))
		if err == nil && int64(len(out)) > sz.Data {
			t.Fatalf("%d bytes, the index declares %d", len(out), sz.Data)
		}
	})
}
