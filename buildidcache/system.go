package buildidcache

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// ReadFileIdentity reads the identity of the ELF file name. It opens the
// file, reads its headers and notes (typically two or three small reads,
// whatever the file's size) and closes it.
func ReadFileIdentity(name string) (*Identity, error) {
	f, err := openRegular(name)
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
			if kind := compression(magic[:]); kind != "" {
				return readCompressed(f, name, kind)
			}
		}
	}
	return id, err
}

// compression names the compressed format a file starts with: kernel
// modules ship as .ko.xz, .ko.zst or .ko.gz (CONFIG_MODULE_COMPRESS_*).
func compression(magic []byte) string {
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

// maxDecompressed caps a decompressed module; the largest modules are a
// few tens of megabytes (amdgpu with debug info).
const maxDecompressed = 256 << 20

// readCompressed reads the identity of a compressed ELF file. The notes of
// a compressed file cannot be reached without decompressing what precedes
// them, and the section headers are at the end, so the whole file is
// decompressed in memory, up to maxDecompressed (as perf does into a
// temporary file: dso__decompress_kmodule in tools/perf/util/dso.c).
func readCompressed(f *os.File, name, kind string) (*Identity, error) {
	var r io.Reader
	var err error
	switch kind {
	case "xz":
		r, err = xz.NewReader(f)
	case "zstd":
		var d *zstd.Decoder
		d, err = zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressed))
		if d != nil {
			defer d.Close()
		}
		r = d
	case "gzip":
		r, err = gzip.NewReader(f)
	}
	if err != nil {
		return nil, &FormatError{File: name, Msg: kind + " stream", Err: err}
	}
	b, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, &FormatError{File: name, Offset: 0, Msg: "decompressing " + kind, Err: err}
	}
	if len(b) > maxDecompressed {
		return nil, &FormatError{File: name, Msg: fmt.Sprintf("decompresses to more than %d bytes", maxDecompressed)}
	}
	id, err := readIdentity(bytes.NewReader(b), int64(len(b)), name+" ("+kind+"-decompressed)")
	if err != nil {
		return nil, err
	}
	id.Compression = kind
	return id, nil
}

// openRegular opens name for reading only if it is a regular file. The
// open is non-blocking, so that a FIFO planted where a binary is expected
// (paths come from perf.data files) cannot hang the caller; O_NONBLOCK has
// no effect on regular files.
func openRegular(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file: %w", name, ErrNotELF)
	}
	return f, nil
}

// Where the running system publishes its identities. Variables so that
// tests can point them elsewhere.
var (
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
func KernelBuildID() (BuildID, error) {
	f, err := os.Open(kernelNotesPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKernelNotes))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kernelNotesPath, err)
	}
	var id Identity
	if err := parseNotes(b, 0, 4, binary.NativeEndian, &id, kernelNotesPath); err != nil {
		return nil, err
	}
	if id.BuildID == nil {
		return nil, fmt.Errorf("%s: %w", kernelNotesPath, ErrNoBuildID)
	}
	return id.BuildID, nil
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
	f, err := os.Open(maps)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != name {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("%s: bad address range %q", maps, fields[0])
		}
		return s, e, nil
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", maps, err)
	}
	return 0, 0, fmt.Errorf("%s: no %s mapping", maps, name)
}
