package symbolize

import (
	"bytes"
	"compress/zlib"
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The hostile inputs of these tests are real fixtures edited in test code:
// a section's contents replaced or a section added by elfWithSection, or
// bytes of a table overwritten in place. Each test says which fixture and
// which edit.

// fixtureBin returns the contents of testdata/perf/bin/name, a binary
// perfcheck's recordings profiled (docs/fixtures.md).
func fixtureBin(t testing.TB, name string) []byte {
	t.Helper()
	d, err := os.ReadFile(filepath.Join("..", "testdata", "perf", "bin", name))
	require.NoError(t, err)
	return d
}

// elfWithSection returns a copy of data, a 64-bit little-endian ELF file,
// in which the section name has type typ, flags flags and holds contents.
// The contents are appended to the file and the section header points at
// them; a section the file lacks is added with a new section header table
// and section name table, appended too. Segments are left alone: the
// sections a symbolizer reads need not be loaded.
func elfWithSection(t testing.TB, data []byte, name string, typ elf.SectionType, flags elf.SectionFlag, contents []byte) []byte {
	t.Helper()
	ef, err := elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, elf.ELFCLASS64, ef.Class)
	require.Equal(t, binary.ByteOrder(binary.LittleEndian), ef.ByteOrder)
	le := binary.LittleEndian
	out := append([]byte(nil), data...)
	align8 := func() {
		for len(out)%8 != 0 {
			out = append(out, 0)
		}
	}
	align8()
	at := uint64(len(out))
	out = append(out, contents...)
	shoff, shnum, shstrndx := le.Uint64(data[0x28:]), int(le.Uint16(data[0x3c:])), int(le.Uint16(data[0x3e:]))
	hdr := func(buf []byte, i int) []byte { return buf[shoff+uint64(i)*64:][:64] }
	set := func(h []byte) {
		le.PutUint32(h[4:], uint32(typ))
		le.PutUint64(h[8:], uint64(flags))
		le.PutUint64(h[24:], at)
		le.PutUint64(h[32:], uint64(len(contents)))
		le.PutUint64(h[48:], 1)
		le.PutUint64(h[56:], 0)
	}
	for i, s := range ef.Sections {
		if s.Name == name {
			set(hdr(out, i))
			return out
		}
	}
	// A new section: a name table with its name, then the header table
	// with one more entry.
	strs, err := ef.Sections[shstrndx].Data()
	require.NoError(t, err)
	nameOff := len(strs)
	align8()
	strAt := uint64(len(out))
	out = append(out, strs...)
	out = append(out, name...)
	out = append(out, 0)
	align8()
	newShoff := uint64(len(out))
	out = append(out, data[shoff:shoff+uint64(shnum)*64]...)
	out = append(out, make([]byte, 64)...)
	shoff = newShoff
	sh := hdr(out, shstrndx)
	le.PutUint64(sh[24:], strAt)
	le.PutUint64(sh[32:], uint64(len(strs)+len(name)+1))
	h := hdr(out, shnum)
	le.PutUint32(h[0:], uint32(nameOff))
	set(h)
	le.PutUint64(out[0x28:], newShoff)
	le.PutUint16(out[0x3c:], uint16(shnum+1))
	return out
}

// compressedSection returns an ELF compression header (Elf64_Chdr) for a
// zlib stream declaring size bytes, followed by the stream.
func compressedSection(size uint64, stream []byte) []byte {
	var chdr [24]byte
	binary.LittleEndian.PutUint32(chdr[0:], uint32(elf.COMPRESS_ZLIB))
	binary.LittleEndian.PutUint64(chdr[8:], size)
	binary.LittleEndian.PutUint64(chdr[16:], 1)
	return append(chdr[:], stream...)
}

// zlibRepeat returns a zlib stream of unit repeated to about n bytes, and
// its exact length, without compressing n bytes: a stream flushed after
// each chunk of whole units emits the same bytes for every chunk after
// the first (the window holds the same bytes at the same phase), so those
// bytes are repeated, then closed with an empty final block and the
// Adler-32 of the whole.
func zlibRepeat(t testing.TB, unit []byte, n uint64) ([]byte, uint64) {
	t.Helper()
	per := max((1<<20)/len(unit), 1)
	chunk := bytes.Repeat(unit, per)
	var buf bytes.Buffer
	w, err := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	require.NoError(t, err)
	_, err = w.Write(chunk)
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	head := buf.Len()
	_, err = w.Write(chunk)
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	rep := append([]byte(nil), buf.Bytes()[head:]...)
	chunks := max(n/uint64(len(chunk)), 1)
	out := append([]byte(nil), buf.Bytes()[:head]...)
	for range chunks - 1 {
		out = append(out, rep...)
	}
	out = append(out, 0x03, 0x00) // a final empty block, fixed Huffman codes
	// Adler-32 of chunks copies of chunk.
	var a, b uint64 = 1, 0
	for range chunks {
		for _, c := range chunk {
			a = (a + uint64(c)) % 65521
			b = (b + a) % 65521
		}
	}
	out = binary.BigEndian.AppendUint32(out, uint32(b<<16|a))
	return out, chunks * uint64(len(chunk))
}

// zlibZeros returns a zlib stream of about n zero bytes (a multiple of
// 1 MiB) and its exact length, at deflate's best ratio, without
// compressing n bytes: a stream flushed after each MiB of zeros emits the
// same bytes for every MiB after the first (the window holds only
// zeros), so those bytes are repeated, then closed with an empty final
// block and the Adler-32 of the zeros.
func zlibZeros(t testing.TB, n uint64) ([]byte, uint64) {
	t.Helper()
	const chunk = 1 << 20
	var buf bytes.Buffer
	w, err := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	require.NoError(t, err)
	zero := make([]byte, chunk)
	_, err = w.Write(zero)
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	head := buf.Len()
	_, err = w.Write(zero)
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	rep := append([]byte(nil), buf.Bytes()[head:]...)
	chunks := max(n/chunk, 1)
	out := append([]byte(nil), buf.Bytes()[:head]...)
	for range chunks - 1 {
		out = append(out, rep...)
	}
	out = append(out, 0x03, 0x00) // a final empty block, fixed Huffman codes
	total := chunks * chunk
	out = binary.BigEndian.AppendUint32(out, uint32(total%65521)<<16|1) // Adler-32 of zeros
	return out, total
}

// hostileRun is what the child of runHostile reported.
type hostileRun struct {
	out      string        // what it printed: the open error, warnings and lookup errors
	peakKB   int64         // its peak resident set (the kernel's maxrss, from wait4)
	elapsed  time.Duration // wall time, start to exit
	exitErr  error         // nil when it exited 0
	inputLen int64         // the input file's size
}

// hostileAddrs is how many addresses the child looks up across the
// input's executable sections.
const hostileAddrs = 400

// childASLimit caps the child's address space: an input that makes the
// symbolizer allocate without bound kills the child (a failed test), not
// the machine the tests share.
const childASLimit = 3 << 30

// runHostile writes data to a file and has a child process (this test
// binary again, running TestHostileChild) do what perfcheck symbolize
// does with it: open it, list its warnings and look addresses up. It
// returns the child's output, peak RSS and time.
func runHostile(t *testing.T, name string, data []byte) hostileRun {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o755))
	// Killed far past the time bound: an input that hangs the
	// symbolizer fails the test rather than hanging it, and a loaded
	// machine does not.
	ctx, cancel := context.WithTimeout(context.Background(), hangTime)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SYMBOLIZE_HOSTILE_CHILD="+p)
	start := time.Now()
	outb, err := cmd.CombinedOutput()
	r := hostileRun{out: string(outb), elapsed: time.Since(start), exitErr: err, inputLen: int64(len(data))}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.peakKB = ru.Maxrss // kilobytes on Linux
	}
	t.Logf("%s (%d bytes): %v, peak %d MB, %v:\n%s", name, len(data), err, r.peakKB>>10, r.elapsed.Round(time.Millisecond), head(r.out, 1500))
	return r
}

// requireBounded checks the bounds every hostile input must meet: the
// child exited normally, with a peak RSS of at most 256 MB plus four times
// the input's size. Its time (30 s is the bound) is logged, not asserted:
// runHostile kills a child that hangs far past it.
func requireBounded(t *testing.T, r hostileRun) {
	t.Helper()
	require.NoError(t, r.exitErr, "the child died:\n%s", head(r.out, 3000))
	require.NotZero(t, r.peakKB, "no peak reported:\n%s", head(r.out, 3000))
	bound := int64(256<<20) + 4*r.inputLen
	require.LessOrEqual(t, r.peakKB<<10, bound, "peak RSS")
}

// hangTime is when runHostile gives up on a child: ten times the 30 s
// a run on a hostile input may take.
const hangTime = 300 * time.Second

func head(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// TestHostileChild is runHostile's child; it does nothing in a normal run.
func TestHostileChild(t *testing.T) {
	p := os.Getenv("SYMBOLIZE_HOSTILE_CHILD")
	if p == "" {
		t.Skip("the child of runHostile")
	}
	lim := syscall.Rlimit{Cur: childASLimit, Max: childASLimit}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_AS, &lim))
	b, err := Open(p, Options{NoDebugFile: true})
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer b.Close()
	for _, w := range b.Warnings() {
		fmt.Println("warning:", w)
	}
	var code [][2]uint64
	for _, s := range b.ef.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && s.Size > 0 {
			code = append(code, [2]uint64{s.Addr, s.Addr + s.Size})
		}
	}
	var buf []Frame
	errs := map[string]int{}
	for _, r := range code {
		step := max((r[1]-r[0])/(hostileAddrs/uint64(len(code))+1), 1)
		for a := r[0]; a < r[1]; a += step {
			if buf, err = b.Frames(a, buf); err != nil {
				errs[err.Error()]++
			}
		}
	}
	for e, n := range errs {
		fmt.Printf("lookup error (%d times): %s\n", n, e)
	}
}
