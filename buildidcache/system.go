package buildidcache

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/internal/budget"
	"github.com/perfcheck/perfcheck/internal/regfile"
	"github.com/perfcheck/perfcheck/internal/xz"
)

// ReadFileIdentity reads the identity of the ELF file name. It opens the
// file, reads its headers and notes (typically two or three small reads,
// whatever the file's size) and closes it.
func ReadFileIdentity(name string) (*Identity, error) {
	f, err := OpenRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return identityOf(f, name)
}

// identityOf reads the identity of an open regular file, decompressing
// it first when it is a compressed module.
func identityOf(f *os.File, name string) (*Identity, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	id, err := readIdentity(f, st.Size(), name)
	if errors.Is(err, ErrNotELF) {
		// Not ELF: perhaps a compressed one. Checked only now, so that
		// plain files cost no extra read.
		var magic [6]byte
		if n, _ := f.ReadAt(magic[:], 0); n == len(magic) {
			if kind := Compression(magic[:]); kind != "" {
				return readCompressed(f, name, kind)
			}
		}
	}
	return id, err
}

// Compression names the compressed format ("xz", "zstd", "gzip") that a
// file whose first bytes are magic (six suffice) is in, or "": kernel
// modules ship as .ko.xz, .ko.zst or .ko.gz (CONFIG_MODULE_COMPRESS_*).
func Compression(magic []byte) string {
	switch {
	case bytes.HasPrefix(magic, []byte("\xfd7zXZ\x00")):
		return "xz"
	case bytes.HasPrefix(magic, []byte("\x28\xb5\x2f\xfd")):
		return "zstd"
	case bytes.HasPrefix(magic, []byte("\x1f\x8b")):
		return "gzip"
	}
	return ""
}

// readCompressed reads the identity of a compressed ELF file. Its notes
// and section headers cannot be reached without decompressing what
// precedes them (perf decompresses the whole module into a temporary file:
// dso__decompress_kmodule in tools/perf/util/dso.c); here the stream is
// decompressed only as far as the ELF reader asks, through a lazy
// ReaderAt, and never past the size the stream declares (measure).
func readCompressed(f *os.File, name, kind string) (*Identity, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	r, out, done, err := decompressor(f, st.Size(), name, kind)
	if err != nil {
		return nil, err
	}
	defer done()
	lz := &lazyReaderAt{r: r, limit: out, kind: kind}
	// The first page tells whether the whole stream is short; if so its
	// size is known and the ELF reader gets it exactly.
	size := out
	var head [headRead]byte
	if n, err := lz.ReadAt(head[:], 0); err == io.EOF {
		size = int64(n)
	} else if err != nil {
		return nil, &FormatError{File: name, Msg: "decompressing " + kind, Err: err}
	}
	id, err := readIdentity(lz, size, name+" ("+kind+"-decompressed)")
	if err != nil {
		return nil, err
	}
	id.Compression = kind
	return id, nil
}

// decoderOverhead is what a decoder holds besides its window: buffers and
// state (klauspost's zstd decoder keeps a block of up to 128 KiB, and
// more), allowed for in each reservation.
const decoderOverhead = 1 << 20

// decompressor returns a reader of f's decompressed kind stream (f holds
// size bytes), the size the stream declares, which the caller must not
// read past, and the function that releases the reader. Before any
// decoder is made, the decompression borrows from the process's budget
// (internal/budget) what it can hold: the declared output, the window or
// dictionary the stream's headers ask for (xz's capped at the output,
// which a valid stream never needs to exceed), and decoderOverhead. It
// waits for other passing decompressions and fails at once, naming the
// file, when the budget cannot hold it.
func decompressor(f *os.File, size int64, name, kind string) (r io.Reader, out int64, done func(), err error) {
	m, err := measure(f, size, name, kind)
	if err != nil {
		return nil, 0, nil, err
	}
	b := budget.Default()
	b.Input(size)
	release, err := b.Borrow(context.Background(), m.out+m.window+decoderOverhead, name, kind+" stream")
	if err != nil {
		return nil, 0, nil, err
	}
	done = release
	switch kind {
	case "xz":
		r = xz.NewReader(m.src, m.out)
	case "zstd":
		d, zerr := zstd.NewReader(m.src, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(max(m.out, 1))), zstd.WithDecoderMaxWindow(uint64(max(m.window, zstd.MinWindowSize))))
		if d != nil {
			done = func() { d.Close(); release() }
		}
		r, err = d, zerr
	case "gzip":
		r, err = gzip.NewReader(bufio.NewReader(m.src))
	}
	if err != nil {
		done()
		return nil, 0, nil, &FormatError{File: name, Msg: kind + " stream", Err: err}
	}
	return r, m.out, done, nil
}

// ErrTooLarge reports a compressed file that decompresses to more than its
// size justifies (see [ReadModule]).
var ErrTooLarge = errors.New("decompresses to more than its size justifies")

// ReadModule returns the ELF bytes of a kernel module file, decompressed
// when the file is compressed, and the compression found ("xz", "zstd",
// "gzip", or "" for a plain file).
//
// The compression is recognised by the file's first bytes, never by its
// name: perf's build-id cache keeps a .ko.xz as <build-id>/elf, with no
// suffix, and a renamed file keeps its content. Like perf
// (dso__decompress_kmodule in tools/perf/util/dso.c) it decompresses the
// whole module, but in memory rather than to a temporary file, and never
// past the size the stream declares (xz's index, the zstd frame's content
// size, gzip's trailer), which may be at most 64 times the compressed size
// plus 16 MiB (256 MiB at most), the same bound [ReadFileIdentity] uses:
// a stream that declares more, or goes on past what it declares, fails
// with an error wrapping [ErrTooLarge]. A plain file
// is returned as read, whatever its first bytes. Only regular files are
// opened (a FIFO cannot block the caller). The bytes are not checked to be
// ELF; errors name the file.
func ReadModule(name string) (data []byte, kind string, err error) {
	f, err := OpenRegular(name)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	var magic [6]byte
	n, err := f.ReadAt(magic[:], 0)
	if err != nil && err != io.EOF {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	kind = Compression(magic[:n])
	if kind == "" {
		b := make([]byte, st.Size())
		if _, err := io.ReadFull(io.NewSectionReader(f, 0, st.Size()), b); err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		return b, "", nil
	}
	b, err := decompressModule(f, st.Size(), name, kind)
	return b, kind, err
}

// ReadModuleIdentity reads the identity of a kernel module file, as
// [ReadFileIdentity] does, and returns the decompressed image it read it
// from when the file is compressed (nil for a plain one, which is read
// through the open file). The file is opened and decompressed once: a
// caller that then needs the module's symbols reads them from this image,
// the very bytes whose build-id was read, instead of opening and
// decompressing the file again (where another file may have been put in
// between). The decompression is bounded as [ReadModule]'s.
func ReadModuleIdentity(name string) (*Identity, []byte, error) {
	f, err := OpenRegular(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	id, err := readIdentity(f, st.Size(), name)
	if !errors.Is(err, ErrNotELF) {
		return id, nil, err
	}
	var magic [6]byte
	n, _ := f.ReadAt(magic[:], 0)
	kind := Compression(magic[:n])
	if kind == "" {
		return id, nil, err
	}
	b, err := decompressModule(f, st.Size(), name, kind)
	if err != nil {
		return nil, nil, err
	}
	if id, err = readIdentity(bytes.NewReader(b), int64(len(b)), name+" ("+kind+"-decompressed)"); err != nil {
		return nil, nil, err
	}
	id.Compression = kind
	return id, b, nil
}

// decompressModule decompresses the whole kind stream of f (size bytes),
// named name, up to the size the stream declares.
func decompressModule(f *os.File, size int64, name, kind string) ([]byte, error) {
	r, out, done, err := decompressor(f, size, name, kind)
	if err != nil {
		return nil, err
	}
	defer done()
	b, err := readAtMost(r, out+1, out)
	if err != nil {
		return nil, fmt.Errorf("%s: decompressing %s after %d bytes out: %w", name, kind, len(b), err)
	}
	if int64(len(b)) > out {
		return nil, fmt.Errorf("%s: %s stream of %d bytes goes on past the %d decompressed bytes it declares: %w", name, kind, size, out, ErrTooLarge)
	}
	return b, nil
}

// readAtMost reads r to its end or to max bytes, whichever comes first,
// into a buffer that starts at guess bytes and doubles, so that what passes
// through the allocator stays within about twice what was read.
func readAtMost(r io.Reader, max, guess int64) ([]byte, error) {
	b := make([]byte, 0, min(max, guess))
	for int64(len(b)) < max {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(max-int64(len(b)), int64(cap(b)))))
		}
		n, err := r.Read(b[len(b):int(min(int64(cap(b)), max))])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// lazyReaderAt serves ReadAt from a decompressing stream, decompressing
// forward only as far as the furthest byte asked for, up to limit.
type lazyReaderAt struct {
	r     io.Reader
	buf   []byte
	limit int64 // the size the stream declares
	kind  string
	eof   bool
	err   error
}

func (l *lazyReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	// The declared size is the file's size: reading past it is
	// reading past the end.
	if off >= l.limit {
		return 0, io.EOF
	}
	want := len(p)
	p = p[:min(int64(len(p)), l.limit-off)]
	end := off + int64(len(p))
	if have := int64(len(l.buf)); end > have && !l.eof && l.err == nil {
		n0 := len(l.buf)
		if end > int64(cap(l.buf)) {
			// Doubling, but never past the declared size, which is
			// what the budget holds for it.
			grown := make([]byte, n0, min(l.limit, max(end, 2*int64(cap(l.buf)))))
			copy(grown, l.buf)
			l.buf = grown
		}
		l.buf = l.buf[:end]
		m, err := io.ReadFull(l.r, l.buf[n0:])
		l.buf = l.buf[:n0+m]
		switch err {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			l.eof = true
		default:
			l.err = fmt.Errorf("decompressing %s: %w", l.kind, err)
		}
	}
	if off >= int64(len(l.buf)) {
		if l.err != nil {
			return 0, l.err
		}
		return 0, io.EOF
	}
	n := copy(p, l.buf[off:])
	if n < want {
		if l.err != nil {
			return n, l.err
		}
		return n, io.EOF
	}
	return n, nil
}

// OpenRegular opens name for reading only if it is a regular file. The
// open is non-blocking, so that a FIFO planted where a binary is expected
// (paths come from perf.data files) cannot hang the caller; O_NONBLOCK has
// no effect on regular files. The type is checked on the open file, so a
// swap after a stat cannot slip a FIFO or a device in. Anything else is an
// error wrapping ErrNotELF (and regfile.ErrNotRegular).
func OpenRegular(name string) (*os.File, error) {
	f, err := regfile.Open(name)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, fmt.Errorf("%s: %w: %w", name, regfile.ErrNotRegular, ErrNotELF)
	}
	return f, err
}

// Where the running system publishes its identities.
const (
	kernelNotesPath = "/sys/kernel/notes"
	procSelfMaps    = "/proc/self/maps"
	procSelfMem     = "/proc/self/mem"
)

// maxKernelNotes caps the read of /sys/kernel/notes (a few hundred bytes on
// real kernels).
const maxKernelNotes = 1 << 16

// KernelBuildID returns the running kernel's build-id, read from
// /sys/kernel/notes: the kernel's own ELF notes, raw, in the machine's byte
// order (as sysfs_read_build_id in tools/perf/util/symbol-elf.c reads
// them). It fails with ErrNoBuildID when the kernel was built without one.
func KernelBuildID() (buildid.ID, error) {
	f, err := os.Open(kernelNotesPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKernelNotes))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kernelNotesPath, err)
	}
	return buildIDFromNotes(b, binary.NativeEndian, kernelNotesPath)
}

// maxVDSO caps the vDSO image we copy out of memory; real ones are two to
// four pages.
const maxVDSO = 1 << 20

// VDSO returns the running process's vDSO image and its identity. The
// image is found through the [vdso] line of /proc/self/maps and read from
// /proc/self/mem: the kernel maps the whole ELF file of the vDSO, section
// headers included (arch/x86/entry/vdso/vdso2c.h), so the ordinary ELF
// reader works on it. perf does the same when it caches the vDSO
// (machine__findnew_vdso and vdso__findnew in tools/perf/util/vdso.c copy
// it to a temporary file).
func VDSO() ([]byte, *Identity, error) {
	start, end, err := findMapping(procSelfMaps, "[vdso]")
	if err != nil {
		return nil, nil, err
	}
	if end <= start || end-start > maxVDSO {
		return nil, nil, fmt.Errorf("%s: [vdso] mapping %#x-%#x has an implausible size", procSelfMaps, start, end)
	}
	f, err := os.Open(procSelfMem)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	img := make([]byte, end-start)
	if _, err := f.ReadAt(img, int64(start)); err != nil {
		return nil, nil, fmt.Errorf("%s at %#x: %w", procSelfMem, start, err)
	}
	id, err := readIdentity(bytes.NewReader(img), int64(len(img)), "[vdso]")
	if err != nil {
		return nil, nil, err
	}
	return img, id, nil
}

// findMapping returns the address range of the first line of a
// /proc/PID/maps file whose path field is name.
func findMapping(maps, name string) (start, end uint64, err error) {
	found := false
	err = scanMaps(maps, func(fields []string) (bool, error) {
		if len(fields) < 6 || fields[5] != name {
			return false, nil
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			return false, nil
		}
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			return true, fmt.Errorf("%s: bad address range %q", maps, fields[0])
		}
		start, end, found = s, e, true
		return true, nil
	})
	if err != nil {
		return 0, 0, err
	}
	if !found {
		return 0, 0, fmt.Errorf("%s: no %s mapping", maps, name)
	}
	return start, end, nil
}

// maxMapsLines bounds the /proc/PID/maps lines read (a process has at
// most vm.max_map_count mappings, 65530 by default).
const maxMapsLines = 1 << 20

// scanMaps calls fn with the fields of each line of a /proc/PID/maps file
// (range, perms, offset, dev as hex maj:min, inode, path; show_map_vma in
// fs/proc/task_mmu.c) until fn stops it or fails, the file ends, or
// maxMapsLines lines were read. findMapping (the vDSO) and mappedFiles
// (cache fill's inode check) both read the file through it.
func scanMaps(maps string, fn func(fields []string) (stop bool, err error)) error {
	f, err := os.Open(maps)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 0; n < maxMapsLines && sc.Scan(); n++ {
		if stop, err := fn(strings.Fields(sc.Text())); stop || err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", maps, err)
	}
	return nil
}
