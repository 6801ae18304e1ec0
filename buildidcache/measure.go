package buildidcache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/perfcheck/perfcheck/internal/xz"
)

// maxDecompressed caps a decompressed module; the largest modules are a
// few tens of megabytes (amdgpu with debug info).
const maxDecompressed = 256 << 20

// decompressLimit is what a compressed file of size n may decompress to:
// real modules shrink 3 to 6 times with xz, so 64 times plus 16 MiB never
// cuts one short, while a few kilobytes of hostile stream cannot make us
// hold 256 MiB.
func decompressLimit(n int64) int64 {
	return min(maxDecompressed, 64*n+16<<20)
}

// measured is a compressed module's stream as its headers describe it,
// before anything is decompressed.
type measured struct {
	src    io.Reader // the compressed stream
	out    int64     // the decompressed size it declares
	window int64     // the decoder's window or dictionary
}

// measure reads what decompressing the kind stream of f (size bytes)
// costs from the stream's own headers, as xz --list, zstd -l and gzip -l
// do: xz's indexes (the whole file is read and walked), the zstd frame
// header's content size and window, gzip's trailer (ISIZE, the size of
// the last member: kernel modules are one member). A stream that
// declares no size (zstd without a content size) may decompress to
// decompressLimit of size; one that declares more is refused with
// ErrTooLarge before anything is decompressed.
func measure(f *os.File, size int64, name, kind string) (measured, error) {
	m := measured{src: io.NewSectionReader(f, 0, size)}
	limit := decompressLimit(size)
	switch kind {
	case "xz":
		if size > maxDecompressed {
			return m, fmt.Errorf("%s: an xz stream of %d bytes, more than a module's %d: %w", name, size, maxDecompressed, ErrTooLarge)
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(m.src, b); err != nil {
			return m, fmt.Errorf("%s: %w", name, err)
		}
		sz, err := xz.Measure(b)
		if err != nil {
			return m, &FormatError{File: name, Msg: "xz stream", Err: err}
		}
		m.src, m.out, m.window = bytes.NewReader(b), sz.Data, sz.Dict
	case "zstd":
		var h [18]byte // the longest frame header
		n, err := f.ReadAt(h[:], 0)
		if err != nil && err != io.EOF {
			return m, fmt.Errorf("%s: %w", name, err)
		}
		window, content, err := zstdFrame(h[:n])
		if err != nil {
			return m, &FormatError{File: name, Msg: "zstd frame header", Err: err}
		}
		m.out, m.window = content, window
		if content < 0 {
			m.out = limit
		}
		m.window = min(m.window, m.out)
	case "gzip":
		var t [4]byte
		if size < 18 { // header and trailer
			return m, &FormatError{File: name, Msg: "gzip stream", Err: io.ErrUnexpectedEOF}
		}
		if _, err := f.ReadAt(t[:], size-4); err != nil {
			return m, fmt.Errorf("%s: %w", name, err)
		}
		m.out, m.window = int64(binary.LittleEndian.Uint32(t[:])), 32<<10
	default:
		return m, fmt.Errorf("%s: unknown compression %q", name, kind)
	}
	if m.out > limit {
		return m, fmt.Errorf("%s: %s stream of %d bytes declares %d decompressed, more than the %d its size justifies: %w", name, kind, size, m.out, limit, ErrTooLarge)
	}
	return m, nil
}

// zstdFrame reads the window size and the content size (-1 when not
// given) from the header of the zstd frame at the start of h, as RFC 8878
// section 3.1.1.1 lays it out.
func zstdFrame(h []byte) (window, content int64, err error) {
	if len(h) < 6 || binary.LittleEndian.Uint32(h) != 0xfd2fb528 {
		return 0, 0, io.ErrUnexpectedEOF
	}
	fhd := h[4]
	if fhd&0x08 != 0 {
		return 0, 0, fmt.Errorf("reserved bit set in frame header descriptor %#x", fhd)
	}
	single := fhd&0x20 != 0
	p := h[5:]
	if !single {
		wd := p[0]
		base := int64(1) << (10 + wd>>3)
		window, p = base+base/8*int64(wd&7), p[1:]
	}
	d := [4]int{0, 1, 2, 4}[fhd&3] // the dictionary id's size
	if len(p) < d {
		return 0, 0, io.ErrUnexpectedEOF
	}
	p = p[d:]
	n := [4]int{0, 2, 4, 8}[fhd>>6]
	if n == 0 && single {
		n = 1
	}
	if len(p) < n {
		return 0, 0, io.ErrUnexpectedEOF
	}
	switch n {
	case 0:
		content = -1
	case 1:
		content = int64(p[0])
	case 2:
		content = int64(binary.LittleEndian.Uint16(p)) + 256
	case 4:
		content = int64(binary.LittleEndian.Uint32(p))
	case 8:
		content = int64(min(binary.LittleEndian.Uint64(p), 1<<62))
	}
	if single {
		window = content
	}
	return window, content, nil
}
