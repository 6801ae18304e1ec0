package xz

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ulikunitz/xz"
)

// realInput is the first 256 KiB of a real binary of the repository's
// fixtures, the kind of data xz streams here hold (kernel modules,
// MiniDebugInfo), small enough for xz -9e to be quick.
func realInput(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/perf/bin/goprog")
	require.NoError(t, err)
	return b[:min(len(b), 256<<10)]
}

// TestRealStreams: what xz(1) writes decodes to the input, with every
// check type, several blocks, several streams with stream padding between
// them, an empty input and a dictionary smaller than the declared one
// but not smaller than the output.
func TestRealStreams(t *testing.T) {
	t.Parallel()
	in := realInput(t)
	cases := map[string][]byte{
		"default":  fixtures.XZ(t, in),
		"crc32":    fixtures.XZ(t, in, "--check=crc32", "--lzma2=dict=1MiB"), // as kernel modules
		"sha256":   fixtures.XZ(t, in, "--check=sha256"),
		"none":     fixtures.XZ(t, in, "--check=none"),
		"blocks":   fixtures.XZ(t, in, "--block-size=50KiB"),
		"extreme":  fixtures.XZ(t, in, "-9e"),
		"empty":    fixtures.XZ(t, nil),
		"sparse":   fixtures.XZ(t, make([]byte, 3<<20)),
		"streams":  append(append(fixtures.XZ(t, in[:1000]), make([]byte, 8)...), fixtures.XZ(t, in[1000:])...),
		"trailing": append(fixtures.XZ(t, in), make([]byte, 12)...),
	}
	for name, comp := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := in
			switch name {
			case "empty":
				want = []byte{}
			case "sparse":
				want = make([]byte, 3<<20)
			}
			got, err := io.ReadAll(NewReader(bytes.NewReader(comp), int64(len(want))))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "decoded %d bytes, want %d", len(got), len(want))
		})
	}
}

// TestAgreesWithUlikunitz: on what github.com/ulikunitz/xz writes, the
// reader decodes what that package's own reader decodes.
func TestAgreesWithUlikunitz(t *testing.T) {
	t.Parallel()
	in := realInput(t)
	var buf bytes.Buffer
	w, err := xz.NewWriter(&buf)
	require.NoError(t, err)
	_, err = w.Write(in)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	got, err := io.ReadAll(NewReader(bytes.NewReader(buf.Bytes()), 1<<30))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(in, got))
}

// TestDictionaryBomb: blocks that declare a 4 GiB dictionary cost the
// capped dictionary, not what they declare, and decode (to nothing) as
// xz(1) decodes them.
func TestDictionaryBomb(t *testing.T) {
	// Not parallel: the allocations are counted for the whole process.
	bomb := fixtures.XZDictBomb(t, 4)
	require.Len(t, bomb, 120)
	if _, err := exec.LookPath("xz"); err == nil {
		cmd := exec.Command("xz", "-dc", "--memlimit=8GiB")
		cmd.Stdin = bytes.NewReader(bomb)
		out, err := cmd.Output()
		require.NoError(t, err, "xz(1) rejects the bomb: the test built it wrong")
		require.Empty(t, out)
	}
	sz, err := Measure(bomb)
	require.NoError(t, err)
	assert.Equal(t, Sizes{Data: 0, Dict: 4096}, sz, "what Measure says reading costs")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := io.ReadAll(NewReader(bytes.NewReader(bomb), sz.Data))
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated")
}

// TestCorrupt: a single-byte change of a real stream is caught — by
// the container's CRC32s, its structure or the CRC64 of the data — with an
// error wrapping ErrFormat, unless the output is still exactly the input (the
// LZMA2 decoder does not check that a chunk's compressed size was all
// used); every truncation fails.
func TestCorrupt(t *testing.T) {
	t.Parallel()
	in := realInput(t)[:4096]
	comp := fixtures.XZ(t, in, "--check=crc64")
	for i := range comp {
		bad := bytes.Clone(comp)
		bad[i] ^= 0x55
		got, err := io.ReadAll(NewReader(bytes.NewReader(bad), 1<<20))
		if err == nil {
			assert.True(t, bytes.Equal(in, got), "byte %d changed the output unnoticed", i)
			continue
		}
		assert.ErrorIs(t, err, ErrFormat, "byte %d changed", i)
	}
	for n := range len(comp) {
		_, err := io.ReadAll(NewReader(bytes.NewReader(comp[:n]), 1<<20))
		assert.ErrorIs(t, err, ErrFormat, "truncated to %d bytes", n)
	}
}

// FuzzReader: any input, seeded from xz(1)'s streams of a real binary and
// from the dictionary bomb, decodes or fails without a panic or a hang,
// within the dictionary cap.
func FuzzReader(f *testing.F) {
	in := realInput(f)[:2048]
	f.Add(fixtures.XZ(f, in))
	f.Add(fixtures.XZ(f, in, "--check=sha256", "--block-size=512"))
	f.Add(fixtures.XZDictBomb(f, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b), 1<<16)
		io.Copy(io.Discard, io.LimitReader(r, 1<<20))
	})
}
