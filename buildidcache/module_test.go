package buildidcache

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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
// than its output, the most deflate allows) is refused with ErrTooLarge
// once it passes decompressLimit of its size, without holding much more
// than that limit in memory.
func TestReadModuleBomb(t *testing.T) {
	// One gzip member of 1 MiB of zeros, repeated: gzip readers go on
	// through concatenated members (RFC 1952 section 2.2), so 150 of them
	// decompress to 150 MiB from about 150 KiB.
	var member bytes.Buffer
	w, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	w.Write(make([]byte, 1<<20))
	w.Close()
	bomb := bytes.Repeat(member.Bytes(), 150)
	limit := decompressLimit(int64(len(bomb)))
	if 4*limit >= 150<<20 {
		t.Fatalf("test stream too large: limit %d", limit)
	}
	p := filepath.Join(t.TempDir(), "elf")
	if err := os.WriteFile(p, bomb, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b, kind, err := ReadModule(p)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), p) || b != nil || kind != "gzip" {
		t.Errorf("ReadModule: %d bytes, kind %q, err %v; want ErrTooLarge naming %s", len(b), kind, err, p)
	}
	// The buffer doubles, so about twice the limit passes through the
	// allocator, plus the decoder's own (more under -race); the whole
	// stream is 150 MiB.
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*uint64(limit) {
		t.Errorf("allocated %d MiB for a %d-byte stream (limit %d MiB)", got>>20, len(bomb), limit>>20)
	}
	// 16 of the same members, within the limit, are read in full.
	os.WriteFile(p, bytes.Repeat(member.Bytes(), 16), 0o644)
	if b, _, err := ReadModule(p); err != nil || len(b) != 16<<20 {
		t.Errorf("16 MiB stream: %d bytes, %v", len(b), err)
	}
}
