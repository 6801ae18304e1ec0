package buildidcache

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadModuleByMagic compresses a real relocatable object with the xz,
// zstd and gzip tools, as kernel modules ship, and stores each under the
// name perf's cache gives it, <build-id>/elf, with no suffix: ReadModule
// recognises the compression by its magic bytes and returns exactly the
// original bytes. A plain file comes back unchanged, and a truncated
// stream is an error naming the file.
func TestReadModuleByMagic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	obj := filepath.Join(dir, "mod.ko")
	src := filepath.Join(dir, "mod.c")
	os.WriteFile(src, []byte("int init_module(void) { return 0; }\n"), 0o644)
	needTool(t, "gcc")
	if b, err := exec.Command("gcc", "-c", "-o", obj, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	want, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	got, kind, err := ReadModule(obj)
	if err != nil || kind != "" || !bytes.Equal(got, want) {
		t.Fatalf("plain: kind %q, %d bytes, err %v; want %d bytes", kind, len(got), err, len(want))
	}
	// ReadModuleIdentity: the identity ReadFileIdentity reads, and the
	// decompressed image only for a compressed file.
	checkIdentity := func(t *testing.T, p, kind string) {
		t.Helper()
		wantID, err := ReadFileIdentity(p)
		if err != nil {
			t.Fatal(err)
		}
		id, img, err := ReadModuleIdentity(p)
		if err != nil {
			t.Fatal(err)
		}
		if id.Compression != kind || !bytes.Equal(id.BuildID, wantID.BuildID) || id.Debug != wantID.Debug {
			t.Errorf("identity %+v, ReadFileIdentity %+v", id, wantID)
		}
		if kind == "" && img != nil || kind != "" && !bytes.Equal(img, want) {
			t.Errorf("compression %q: image of %d bytes, equal %v", kind, len(img), bytes.Equal(img, want))
		}
	}
	checkIdentity(t, obj, "")
	for _, c := range []struct{ tool, ext string }{{"xz", ".xz"}, {"zstd", ".zst"}, {"gzip", ".gz"}} {
		t.Run(c.tool, func(t *testing.T) {
			needTool(t, c.tool)
			if b, err := exec.Command(c.tool, "-k", "-f", obj).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", c.tool, err, b)
			}
			// As perf caches it: no suffix to go by.
			elfPath := filepath.Join(dir, c.tool, "elf")
			os.MkdirAll(filepath.Dir(elfPath), 0o755)
			if err := os.Rename(obj+c.ext, elfPath); err != nil {
				t.Fatal(err)
			}
			got, kind, err := ReadModule(elfPath)
			if err != nil {
				t.Fatal(err)
			}
			if kind != c.tool || !bytes.Equal(got, want) {
				t.Errorf("kind %q, %d bytes equal %v; want %q, %d bytes", kind, len(got), bytes.Equal(got, want), c.tool, len(want))
			}
			checkIdentity(t, elfPath, c.tool)
			b, _ := os.ReadFile(elfPath)
			cut := filepath.Join(dir, c.tool, "cut")
			os.WriteFile(cut, b[:len(b)/2], 0o644)
			if _, _, err := ReadModule(cut); err == nil || !strings.Contains(err.Error(), cut) {
				t.Errorf("truncated %s stream: err %v, want an error naming %s", c.tool, err, cut)
			}
			if _, _, err := ReadModuleIdentity(cut); err == nil || !strings.Contains(err.Error(), cut) {
				t.Errorf("ReadModuleIdentity, truncated %s stream: err %v, want an error naming %s", c.tool, err, cut)
			}
		})
	}
}

// TestReadModuleBomb: a gzip stream of zeros (about 1,000 times smaller
// than its output, the most deflate allows) is read no further than the
// size its trailer declares: one that declares more than decompressLimit
// of its size is refused with ErrTooLarge before anything is
// decompressed, one that goes on past what it declares (concatenated
// members: the trailer is the last one's) is refused once past it,
// without holding much more than that in memory.
func TestReadModuleBomb(t *testing.T) {
	// Not parallel: the allocations are counted for the whole process.
	// One gzip member of 1 MiB of zeros, repeated: gzip readers go on
	// through concatenated members (RFC 1952 section 2.2), so 150 of them
	// decompress to 150 MiB from about 150 KiB.
	var member bytes.Buffer
	w, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	w.Write(make([]byte, 1<<20))
	w.Close()
	bomb := bytes.Repeat(member.Bytes(), 150)
	p := filepath.Join(t.TempDir(), "elf")
	require.NoError(t, os.WriteFile(p, bomb, 0o644))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b, kind, err := ReadModule(p)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), p)
	assert.Contains(t, err.Error(), "goes on past the 1048576 decompressed bytes it declares")
	assert.Nil(t, b)
	assert.Equal(t, "gzip", kind)
	// The declared MiB and the decoder's own (more under -race).
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "bytes allocated")

	// One member whose trailer says 150 MiB, more than decompressLimit
	// of its size: refused at once.
	lie := bytes.Clone(member.Bytes())
	binary.LittleEndian.PutUint32(lie[len(lie)-4:], 150<<20)
	require.NoError(t, os.WriteFile(p, lie, 0o644))
	_, _, err = ReadModule(p)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "declares 157286400 decompressed")

	// One member of 16 MiB, within the limit, is read in full.
	var big bytes.Buffer
	w, _ = gzip.NewWriterLevel(&big, gzip.BestCompression)
	w.Write(make([]byte, 16<<20))
	w.Close()
	require.NoError(t, os.WriteFile(p, big.Bytes(), 0o644))
	b, _, err = ReadModule(p)
	require.NoError(t, err)
	assert.Len(t, b, 16<<20)
}
