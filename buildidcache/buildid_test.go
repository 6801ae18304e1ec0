package buildidcache

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/dso"
)

func TestLookupNames(t *testing.T) {
	t.Parallel()
	id16 := buildid.ID(bytes.Repeat([]byte{0xab}, 16))
	padded := buildid.ID(append(bytes.Clone(id16), 0, 0, 0, 0))
	names := lookupNames(padded)
	if len(names) != 2 || names[0] != padded.String() || names[1] != id16.String() {
		t.Errorf("lookupNames(%v) = %v", padded, names)
	}
}

// TestReadIdentityC checks GNU build-ids of every common length against
// readelf, on binaries gcc builds here.
func TestReadIdentityC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		flags []string
		size  int // 0: no build-id expected
	}{
		{"sha1", []string{"-Wl,--build-id=sha1"}, 20},
		{"md5", []string{"-Wl,--build-id=md5"}, 16},
		{"fast8", []string{"-Wl,--build-id=0x0102030405060708"}, 8},
		{"none", []string{"-Wl,--build-id=none"}, 0},
		{"debug", []string{"-g", "-Wl,--build-id"}, 20},
		{"stripped", []string{"-s", "-Wl,--build-id"}, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := buildC(t, dir, c.name, c.flags...)
			id, err := ReadFileIdentity(bin)
			if err != nil {
				t.Fatal(err)
			}
			if len(id.BuildID) != c.size {
				t.Fatalf("build-id %v has %d bytes, want %d", id.BuildID, len(id.BuildID), c.size)
			}
			if want := readelfID(t, bin); id.BuildID.String() != want {
				t.Errorf("build-id %v, readelf says %q", id.BuildID, want)
			}
			if c.name == "fast8" && id.BuildID.String() != "0102030405060708" {
				t.Errorf("8-byte build-id = %v", id.BuildID)
			}
			if id.Class != 64 || id.BigEndian || id.FromSegments {
				t.Errorf("class %d big-endian %v from segments %v", id.Class, id.BigEndian, id.FromSegments)
			}
			want := DebugSymtab
			switch c.name {
			case "debug":
				want = DebugDWARF
			case "stripped":
				want = DebugDynsym
			}
			if id.Debug != want {
				t.Errorf("debug level %v, want %v", id.Debug, want)
			}
		})
	}
}

// TestReadIdentityGo checks Go binaries: the default link since Go 1.24
// derives a GNU build-id from the Go build-id, -B none drops it, and
// cross-compiled binaries give the other classes and byte orders
// (386: 32-bit little-endian, mips: 32-bit big-endian, s390x: 64-bit
// big-endian), all checked against readelf.
func TestReadIdentityGo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name      string
		env       []string
		flags     []string
		class     int
		bigEndian bool
		gnu       bool
	}{
		{"default", nil, nil, 64, false, true},
		{"Bnone", nil, []string{"-ldflags=-B=none"}, 64, false, false},
		{"386", []string{"GOOS=linux", "GOARCH=386"}, nil, 32, false, true},
		{"mips", []string{"GOOS=linux", "GOARCH=mips"}, nil, 32, true, true},
		{"s390x", []string{"GOOS=linux", "GOARCH=s390x"}, nil, 64, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if testing.Short() && c.env != nil {
				t.Skip("cross-compiling is slow on a cold build cache")
			}
			bin := buildGo(t, dir, c.name, c.env, c.flags...)
			id, err := ReadFileIdentity(bin)
			if err != nil {
				t.Fatal(err)
			}
			if id.Class != c.class || id.BigEndian != c.bigEndian {
				t.Errorf("class %d big-endian %v, want %d %v", id.Class, id.BigEndian, c.class, c.bigEndian)
			}
			if (id.BuildID != nil) != c.gnu {
				t.Errorf("GNU build-id %v, want one: %v", id.BuildID, c.gnu)
			}
			if want := readelfID(t, bin); id.BuildID.String() != want {
				t.Errorf("build-id %v, readelf says %q", id.BuildID, want)
			}
			if want := readelfGoID(t, bin); want == "" || id.GoBuildID != want {
				t.Errorf("Go build-id %q, readelf says %q", id.GoBuildID, want)
			}
		})
	}
}

// TestReadIdentityNoSections strips the section header table from a real
// binary with llvm-objcopy --strip-sections when it is installed, and
// otherwise by zeroing e_shoff/e_shnum/e_shstrndx in a copy (the same
// result for a reader); the build-id must then come from PT_NOTE.
func TestReadIdentityNoSections(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildC(t, dir, "prog", "-Wl,--build-id")
	want := readelfID(t, bin)
	stripped := filepath.Join(dir, "nosections")
	if p, err := exec.LookPath("llvm-objcopy"); err == nil {
		if b, err := exec.Command(p, "--strip-sections", bin, stripped).CombinedOutput(); err != nil {
			t.Fatalf("llvm-objcopy: %v\n%s", err, b)
		}
	} else {
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint64(b[40:], 0) // e_shoff
		binary.LittleEndian.PutUint16(b[60:], 0) // e_shnum
		binary.LittleEndian.PutUint16(b[62:], 0) // e_shstrndx
		if err := os.WriteFile(stripped, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	id, err := ReadFileIdentity(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if id.BuildID.String() != want || !id.FromSegments {
		t.Errorf("build-id %v (from segments %v), want %s from segments", id.BuildID, id.FromSegments, want)
	}
	if id.Debug != DebugNone {
		t.Errorf("debug level %v without sections", id.Debug)
	}
}

// countingReaderAt counts reads and bytes, to prove that reading a
// build-id touches only a few small pieces of a file.
type countingReaderAt struct {
	r            io.ReaderAt
	reads, bytes int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	c.bytes += len(p)
	return c.r.ReadAt(p, off)
}

func TestReadIdentityTouchesOnlyNotes(t *testing.T) {
	t.Parallel()
	// The Go toolchain binary is tens of megabytes with DWARF.
	bin := filepath.Join(filepath.Dir(goTool(t)), "go")
	f, err := os.Open(bin)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	c := &countingReaderAt{r: f}
	id, err := ReadIdentity(c, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if id.BuildID == nil || id.GoBuildID == "" {
		t.Fatalf("%s: no build-ids: %+v", bin, id)
	}
	if c.reads > 5 || c.bytes > 64<<10 {
		t.Errorf("read %d times, %d bytes of a %d-byte file", c.reads, c.bytes, st.Size())
	}
}

// TestReadIdentitySystem compares our reader with debug/elf on the
// binaries of /usr/bin (debug/elf reads whole note sections; it is the
// reference here, not the implementation).
func TestReadIdentitySystem(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("/usr/bin/*")
	n := 0
	for _, name := range files {
		if n >= 300 {
			break
		}
		want, ok := stdlibBuildID(name)
		if !ok {
			continue
		}
		n++
		id, err := ReadFileIdentity(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if id.BuildID.String() != want {
			t.Errorf("%s: build-id %v, debug/elf finds %q", name, id.BuildID, want)
		}
	}
	if n == 0 {
		t.Skip("no ELF files in /usr/bin")
	}
}

// stdlibBuildID reads the GNU build-id with debug/elf; ok is false when the
// file is not an ELF file debug/elf accepts.
func stdlibBuildID(name string) (id string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	f, err := elf.Open(name)
	if err != nil {
		return "", false
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		b, err := s.Data()
		if err != nil {
			continue
		}
		for len(b) >= 12 {
			nsz, dsz, typ := f.ByteOrder.Uint32(b), f.ByteOrder.Uint32(b[4:]), f.ByteOrder.Uint32(b[8:])
			a := uint32(4)
			if s.Addralign == 8 {
				a = 8
			}
			do := (12 + nsz + a - 1) &^ (a - 1)
			end := (do + dsz + a - 1) &^ (a - 1)
			if uint64(do)+uint64(dsz) > uint64(len(b)) {
				break
			}
			if typ == 3 && string(b[12:12+nsz]) == "GNU\x00" {
				return buildid.ID(b[do : do+dsz]).String(), true
			}
			if uint64(end) > uint64(len(b)) {
				break
			}
			b = b[end:]
		}
	}
	return "", true
}

// TestReadIdentityBrokenOtherNote corrupts the .note.ABI-tag note of a real
// binary (its name size made huge): the build-id note is still found.
func TestReadIdentityBrokenOtherNote(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildC(t, dir, "prog", "-Wl,--build-id")
	want := mustID(t, bin).BuildID
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Section(".note.ABI-tag")
	f.Close()
	if s == nil {
		t.Skip("no .note.ABI-tag section")
	}
	b, _ := os.ReadFile(bin)
	binary.LittleEndian.PutUint32(b[s.Offset:], 0x7fffffff)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	id, err := ReadFileIdentity(bin)
	if err != nil || !id.BuildID.Matches(want) {
		t.Errorf("id %+v, err %v", id, err)
	}
}

func TestReadIdentityNotELF(t *testing.T) {
	t.Parallel()
	_, err := ReadIdentity(strings.NewReader("#!/bin/sh\necho hi\n"), 18)
	if !errors.Is(err, ErrNotELF) {
		t.Errorf("err = %v, want ErrNotELF", err)
	}
	_, err = ReadFileIdentity(t.TempDir())
	if !errors.Is(err, ErrNotELF) {
		t.Errorf("directory: err = %v, want ErrNotELF", err)
	}
}

// TestReadIdentityTruncated cuts a real binary at many lengths: every cut
// must give either a clean error (with an offset, io.ErrUnexpectedEOF for
// truncation) or a result, and never a panic.
func TestReadIdentityTruncated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildC(t, dir, "prog", "-Wl,--build-id")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	full, err := ReadIdentity(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(data); n += 1 + n/16 {
		id, err := ReadIdentity(bytes.NewReader(data[:n]), int64(n))
		if err != nil {
			if id != nil {
				t.Fatalf("cut at %d: result and error", n)
			}
			var fe *FormatError
			if errors.As(err, &fe) && fe.Offset < 0 {
				t.Errorf("cut at %d: negative offset in %v", n, err)
			}
			continue
		}
		if id.BuildID != nil && !id.BuildID.Matches(full.BuildID) {
			t.Errorf("cut at %d: build-id %v, full file has %v", n, id.BuildID, full.BuildID)
		}
	}
}

// TestKernelBuildID compares /sys/kernel/notes with what perf says about the
// running kernel.
func TestKernelBuildID(t *testing.T) {
	t.Parallel()
	id, err := KernelBuildID()
	if err != nil {
		t.Skipf("no kernel build-id here: %v", err)
	}
	needTool(t, "perf")
	out, err := exec.Command("perf", "buildid-list", "-k").Output()
	if err != nil {
		t.Skipf("perf buildid-list -k: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != id.String() {
		t.Errorf("kernel build-id %v, perf says %q", id, got)
	}
}

// TestVDSO reads the vDSO out of our own memory and checks it with
// debug/elf and readelf on a copy.
func TestVDSO(t *testing.T) {
	t.Parallel()
	img, id, err := VDSO()
	if err != nil {
		t.Skipf("no vDSO readable here: %v", err)
	}
	if id.BuildID == nil {
		t.Fatal("vDSO without a build-id")
	}
	p := filepath.Join(t.TempDir(), "vdso.so")
	if err := os.WriteFile(p, img, 0o644); err != nil {
		t.Fatal(err)
	}
	if want := readelfID(t, p); want != id.BuildID.String() {
		t.Errorf("vDSO build-id %v, readelf says %q", id.BuildID, want)
	}
}

// tinyELF builds a minimal 64-bit little-endian ELF in memory: a GNU
// build-id note, a Go build-id note, a .gnu_debuglink and a section-name
// table, with a PT_NOTE segment over the notes. It is a compact fuzz seed
// (the fuzzer crawls on real 40 KB binaries); real binaries are tested
// above.
func tinyELF() []byte {
	le := binary.LittleEndian
	note := func(name string, typ uint32, desc []byte) []byte {
		n := []byte(name) // with its NULs, as the namesz counts them
		for len(n)%4 != 0 {
			n = append(n, 0)
		}
		d := append([]byte(nil), desc...)
		for len(d)%4 != 0 {
			d = append(d, 0)
		}
		h := make([]byte, 12)
		le.PutUint32(h, uint32(len(name)))
		le.PutUint32(h[4:], uint32(len(desc)))
		le.PutUint32(h[8:], typ)
		return append(append(h, n...), d...)
	}
	notes := append(note("GNU\x00", 3, []byte{1, 2, 3, 4, 5, 6, 7, 8}), note("Go\x00\x00", 4, []byte("abc/def"))...)
	link := append([]byte("x.debug\x00"), 0, 0, 0, 0)
	names := []byte("\x00.notes\x00.gnu_debuglink\x00.shstrtab\x00")
	const hdr, ph = 64, 56
	notesOff := hdr + ph
	linkOff := notesOff + len(notes)
	namesOff := linkOff + len(link)
	shOff := namesOff + len(names)
	b := make([]byte, shOff+4*64)
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 2)
	le.PutUint16(b[18:], 62)
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[32:], hdr)
	le.PutUint64(b[40:], uint64(shOff))
	le.PutUint16(b[52:], hdr)
	le.PutUint16(b[54:], ph)
	le.PutUint16(b[56:], 1)
	le.PutUint16(b[58:], 64)
	le.PutUint16(b[60:], 4)
	le.PutUint16(b[62:], 3)
	p := b[hdr:]
	le.PutUint32(p, 4) // PT_NOTE
	le.PutUint64(p[8:], uint64(notesOff))
	le.PutUint64(p[32:], uint64(len(notes)))
	le.PutUint64(p[48:], 4)
	copy(b[notesOff:], notes)
	copy(b[linkOff:], link)
	copy(b[namesOff:], names)
	sec := func(i int, name, typ uint32, off, size int) {
		s := b[shOff+64*i:]
		le.PutUint32(s, name)
		le.PutUint32(s[4:], typ)
		le.PutUint64(s[24:], uint64(off))
		le.PutUint64(s[32:], uint64(size))
		le.PutUint64(s[48:], 4)
	}
	sec(1, 1, 7, notesOff, len(notes))
	sec(2, 8, 1, linkOff, len(link))
	sec(3, 23, 3, namesOff, len(names))
	return b
}

func TestTinyELF(t *testing.T) {
	t.Parallel()
	b := tinyELF()
	id, err := ReadIdentity(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if id.BuildID.String() != "0102030405060708" || id.GoBuildID != "abc/def" || id.DebugLink != "x.debug" || id.FromSegments {
		t.Errorf("%+v", id)
	}
	if p := filepath.Join(t.TempDir(), "tiny"); os.WriteFile(p, b, 0o644) == nil {
		if want := readelfID(t, p); want != id.BuildID.String() {
			t.Errorf("readelf reads %q", want)
		}
	}
}

func FuzzReadIdentity(f *testing.F) {
	f.Add(tinyELF())
	if b, err := os.ReadFile("/usr/bin/true"); err == nil && len(b) > 4096 {
		// The first page of a real binary, section headers cut off:
		// the PT_NOTE path.
		head := bytes.Clone(b[:4096])
		binary.LittleEndian.PutUint64(head[40:], 0)
		binary.LittleEndian.PutUint16(head[60:], 0)
		f.Add(head)
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := ReadIdentity(bytes.NewReader(b), int64(len(b)))
		if (err == nil) == (id == nil) {
			t.Fatalf("id %v, err %v", id, err)
		}
		if id != nil && len(id.BuildID) > maxBuildIDLen {
			t.Fatalf("build-id of %d bytes", len(id.BuildID))
		}
	})
}

// TestReadIdentityCompressed compresses a real binary with the xz, zstd
// and gzip tools, as kernel modules ship: the same build-id comes out, and
// the resolver and the cache accept the compressed file.
func TestReadIdentityCompressed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildC(t, dir, "mod.ko", "-Wl,--build-id")
	want := mustID(t, bin).BuildID
	for _, c := range []struct{ tool, ext, kind string }{{"xz", ".xz", "xz"}, {"zstd", ".zst", "zstd"}, {"gzip", ".gz", "gzip"}} {
		t.Run(c.kind, func(t *testing.T) {
			needTool(t, c.tool)
			out := bin + c.ext
			if b, err := exec.Command(c.tool, "-k", "-f", bin).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", c.tool, err, b)
			}
			id, err := ReadFileIdentity(out)
			if err != nil {
				t.Fatal(err)
			}
			if !id.BuildID.Matches(want) || id.Compression != c.kind {
				t.Errorf("%+v, want %v", id, want)
			}
			res, err := New(Options{BuildIDDir: "-", DebugDirs: []string{}, DebuginfodURLs: []string{}, DebuginfodCache: t.TempDir()}).
				Resolve(context.Background(), Query{BuildID: want, Path: out, Kind: dso.Module})
			if err != nil || res.Identity.Compression != c.kind {
				t.Errorf("resolve: %+v %v", res, err)
			}
			e, err := (&Cache{Dir: filepath.Join(dir, "cache-"+c.kind)}).AddFile(out, "/lib/modules/x/mod.ko"+c.ext, want)
			if err != nil || !e.Added {
				t.Errorf("cache: %+v %v", e, err)
			}
			// A truncated stream is an error naming the file, not a panic.
			b, _ := os.ReadFile(out)
			cut := filepath.Join(dir, "cut"+c.ext)
			os.WriteFile(cut, b[:len(b)/2], 0o644)
			if _, err := ReadFileIdentity(cut); err == nil || !strings.Contains(err.Error(), cut) {
				t.Errorf("truncated: %v", err)
			}
		})
	}
}

// manyNotesELF builds a 64-bit little-endian ELF of about 1.2 MB whose
// n SHT_NOTE section headers all point into one region of `region` bytes
// that starts with the given notes and is zero after them (zeros parse as
// empty notes). With slide, section i starts 4*i bytes further and keeps
// its size, so no region lies inside another. Built in code because no
// tool writes such a file; it is the shape of the attack, not of a binary.
func manyNotesELF(n, region int, slide bool, notes []byte) []byte {
	le := binary.LittleEndian
	const hdr = 64
	dataEnd := hdr + region
	if slide {
		dataEnd += 4 * n
	}
	shOff := (dataEnd + 7) &^ 7
	b := make([]byte, shOff+64*(n+1))
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 2)
	le.PutUint16(b[18:], 62)
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[40:], uint64(shOff))
	le.PutUint16(b[52:], hdr)
	le.PutUint16(b[58:], 64)
	le.PutUint16(b[60:], uint16(n+1))
	copy(b[hdr:], notes)
	for i := 1; i <= n; i++ {
		s := b[shOff+64*i:]
		off := hdr
		if slide {
			off += 4 * (i - 1)
		}
		le.PutUint32(s[4:], 7) // SHT_NOTE
		le.PutUint64(s[24:], uint64(off))
		le.PutUint64(s[32:], uint64(region))
		le.PutUint64(s[48:], 4)
	}
	return b
}

func elfNote(name string, typ uint32, desc []byte) []byte {
	le := binary.LittleEndian
	h := make([]byte, 12)
	le.PutUint32(h, uint32(len(name)))
	le.PutUint32(h[4:], uint32(len(desc)))
	le.PutUint32(h[8:], typ)
	n := []byte(name)
	for len(n)%4 != 0 {
		n = append(n, 0)
	}
	d := append([]byte(nil), desc...)
	for len(d)%4 != 0 {
		d = append(d, 0)
	}
	return append(append(h, n...), d...)
}

// TestReadIdentityNoteBudget: many note sections over the same bytes cost
// at most about the file's size in reads, not one read per section.
func TestReadIdentityNoteBudget(t *testing.T) {
	t.Parallel()
	gnu := elfNote("GNU\x00", 3, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	both := append(append([]byte(nil), gnu...), elfNote("Go\x00\x00", 4, []byte("a/b"))...)
	for _, tc := range []struct {
		name  string
		slide bool
		notes []byte
	}{
		{"same-region-gnu-only", false, gnu},
		{"same-region-both-ids", false, both},
		{"sliding-regions-gnu-only", true, gnu},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := manyNotesELF(2000, 1<<20, tc.slide, tc.notes)
			c := &countingReaderAt{r: bytes.NewReader(b)}
			id, err := ReadIdentity(c, int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if id.BuildID.String() != "0102030405060708" {
				t.Errorf("build-id %v", id.BuildID)
			}
			// The section table (128 KB) and the notes, each once or so.
			if c.bytes > 2*len(b) {
				t.Errorf("read %d bytes in %d reads of a %d-byte file", c.bytes, c.reads, len(b))
			}
		})
	}
}

// TestReadIdentityHugeEntSize: a header table entry size far beyond the
// gABI's is refused before the table is read, not read in full.
func TestReadIdentityHugeEntSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		at   int // offset of e_shentsize or e_phentsize in the ELF64 header
	}{{"shentsize", 58}, {"phentsize", 54}} {
		t.Run(tc.name, func(t *testing.T) {
			b := tinyELF()
			if tc.at == 54 {
				// Without section headers, so that the segments are read.
				binary.LittleEndian.PutUint64(b[40:], 0)
			}
			binary.LittleEndian.PutUint16(b[tc.at:], 4096)
			binary.LittleEndian.PutUint16(b[tc.at+2:], 1000)
			b = append(b, make([]byte, 4096*1000)...)
			c := &countingReaderAt{r: bytes.NewReader(b)}
			_, err := ReadIdentity(c, int64(len(b)))
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), "header size 4096") {
				t.Errorf("err = %v", err)
			}
			if c.bytes > 64<<10 {
				t.Errorf("read %d bytes", c.bytes)
			}
		})
	}
}

// TestReadIdentityCompressedBomb: a few kilobytes of zstd whose ELF
// header puts the section headers 100 MiB in (built in code: zeros after a
// 64-byte header, as no tool writes such a module) are refused after
// decompressing at most decompressLimit of the compressed size, not
// decompressed in full.
func TestReadIdentityCompressedBomb(t *testing.T) {
	const shoff = 100 << 20
	hdr := make([]byte, 64)
	copy(hdr, "\x7fELF\x02\x01\x01")
	le := binary.LittleEndian
	le.PutUint16(hdr[16:], 1) // ET_REL, as a module
	le.PutUint64(hdr[40:], shoff)
	le.PutUint16(hdr[52:], 64)
	le.PutUint16(hdr[58:], 64)
	le.PutUint16(hdr[60:], 10)
	var zbuf bytes.Buffer
	enc, err := zstd.NewWriter(&zbuf, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	enc.Write(hdr)
	zero := make([]byte, 1<<20)
	for i := 0; i < shoff>>20+1; i++ {
		enc.Write(zero)
	}
	enc.Close()
	p := filepath.Join(t.TempDir(), "bomb.ko.zst")
	if err := os.WriteFile(p, zbuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = ReadFileIdentity(p)
	runtime.ReadMemStats(&after)
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), p) {
		t.Errorf("err = %v", err)
	}
	limit := decompressLimit(int64(zbuf.Len()))
	if got := after.TotalAlloc - before.TotalAlloc; got > uint64(limit)+8<<20 {
		t.Errorf("allocated %d MiB for a %d-byte file (limit %d MiB)", got>>20, zbuf.Len(), limit>>20)
	}
}
