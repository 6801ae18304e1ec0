package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// maxInflate bounds the declared size of a compressed section against its
// compressed size: deflate cannot expand more than 1032-fold, zstd far less
// in practice; a header that claims more is corrupt and would only make us
// allocate what the input does not justify.
const maxInflate = 1100

// maxSection bounds the declared size of any compressed section.
const maxSection = 1 << 36

// readChunk is the most a read allocates ahead of the bytes it has: a
// size taken from a header is trusted up to it, and beyond it the buffer
// grows only as data arrives, as internal/saferio.ReadData reads.
const readChunk = 10 << 20

// compressed describes the compressed stream of a section.
type compressed struct {
	typ  elf.CompressionType
	size uint64 // declared decompressed size
	hdr  int64  // header bytes before the stream
	n    int64  // bytes of the stream
}

// sectionBytes returns the contents of s (read through ra, the file ef was
// parsed from: debug/elf gives compressed sections no raw reader),
// decompressing SHF_COMPRESSED sections (zlib or zstd) and GNU's older
// .zdebug_* sections, which debug/elf's Section.Data does not know; other
// sections come from Section.Data, which reads in bounded chunks. Each
// section is decompressed once, with klauspost/compress, whose zlib reader
// is faster than compress/zlib's (bench/README.md).
func sectionBytes(ef *elf.File, ra io.ReaderAt, s *elf.Section) ([]byte, error) {
	c, ok, err := compressionOf(ef, ra, s)
	if err != nil {
		return nil, err
	}
	if !ok || c.typ != elf.COMPRESS_ZLIB && c.typ != elf.COMPRESS_ZSTD {
		// Stored as is, or a type debug/elf decides (and reports).
		d, err := sectionData(s)
		if err != nil {
			return nil, fmt.Errorf("section %s at offset %#x: %w", s.Name, s.Offset, err)
		}
		return d, nil
	}
	if c.size > uint64(c.n)*maxInflate+4096 || c.size > maxSection {
		return nil, fmt.Errorf("section %s at offset %#x: %w: claims %d bytes from %d compressed", s.Name, s.Offset, ErrMalformed, c.size, c.n)
	}
	return c.read(ra, s)
}

// sectionData is s.Data, except that a section that runs past the end of
// the file gives io.ErrUnexpectedEOF rather than debug/elf's bare io.EOF,
// which reads like a clean end.
func sectionData(s *elf.Section) ([]byte, error) {
	d, err := s.Data()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return d, err
}

// compressionOf reads the compression header of s; ok is false for a
// section stored as is.
func compressionOf(ef *elf.File, ra io.ReaderAt, s *elf.Section) (c compressed, ok bool, err error) {
	var hdr [24]byte
	switch {
	case s.Flags&elf.SHF_COMPRESSED != 0:
		c.hdr = 24
		if ef.Class == elf.ELFCLASS32 {
			c.hdr = 12
		}
		if s.FileSize < uint64(c.hdr) {
			return c, false, fmt.Errorf("section %s at offset %#x: %w: compression header truncated", s.Name, s.Offset, ErrMalformed)
		}
		if _, err := ra.ReadAt(hdr[:c.hdr], int64(s.Offset)); err != nil {
			return c, false, fmt.Errorf("section %s at offset %#x: %w", s.Name, s.Offset, err)
		}
		bo := ef.ByteOrder
		c.typ = elf.CompressionType(bo.Uint32(hdr[0:]))
		if c.hdr == 24 {
			c.size = bo.Uint64(hdr[8:])
		} else {
			c.size = uint64(bo.Uint32(hdr[4:]))
		}
	case strings.HasPrefix(s.Name, ".zdebug_") && s.Type != elf.SHT_NOBITS:
		// The GNU format that predates SHF_COMPRESSED (gcc
		// -gz=zlib-gnu, objcopy --compress-debug-sections=zlib-gnu):
		// "ZLIB", the decompressed size as 8 big-endian bytes, then a
		// zlib stream, whatever the file's byte order. A .zdebug_
		// section without the magic is stored as is, as binutils
		// reads it (bfd_is_section_compressed_info, bfd/compress.c).
		c.hdr = 12
		if s.FileSize < uint64(c.hdr) {
			return c, false, nil
		}
		if _, err := ra.ReadAt(hdr[:c.hdr], int64(s.Offset)); err != nil {
			return c, false, fmt.Errorf("section %s at offset %#x: %w", s.Name, s.Offset, err)
		}
		if string(hdr[:4]) != "ZLIB" {
			return c, false, nil
		}
		c.typ, c.size = elf.COMPRESS_ZLIB, binary.BigEndian.Uint64(hdr[4:])
	default:
		return c, false, nil
	}
	c.n = int64(s.FileSize) - c.hdr
	return c, true, nil
}

// read decompresses the stream of s.
func (c compressed) read(ra io.ReaderAt, s *elf.Section) ([]byte, error) {
	src := io.NewSectionReader(ra, int64(s.Offset)+c.hdr, c.n)
	var r io.Reader
	switch c.typ {
	case elf.COMPRESS_ZLIB:
		zr, err := zlib.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("section %s at offset %#x: %w: %w", s.Name, s.Offset, ErrMalformed, err)
		}
		defer zr.Close()
		r = zr
	default:
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(c.size+1<<20))
		if err != nil {
			return nil, fmt.Errorf("section %s at offset %#x: %w: %w", s.Name, s.Offset, ErrMalformed, err)
		}
		defer zr.Close()
		r = zr
	}
	// DWARF compresses 3 to 5 times: 16 covers it without trusting
	// the header.
	out, err := readSized(r, c.size, uint64(c.n)*16+4096)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("section %s at offset %#x: %w: decompresses to %d bytes, header says %d: %w", s.Name, s.Offset, ErrMalformed, len(out), c.size, err)
	}
	if err != nil {
		return nil, fmt.Errorf("section %s at offset %#x: %w: %w", s.Name, s.Offset, ErrMalformed, err)
	}
	return out, nil
}

// readSized reads n bytes from r. It allocates at first what the input
// makes plausible (first, bounded by readChunk) and grows the buffer, by
// at most readChunk at a time, only as the bytes arrive, as
// internal/saferio.ReadData reads: a size that lies costs no more than the
// data behind it. A stream that ends early gives io.ErrUnexpectedEOF, with
// what was read.
func readSized(r io.Reader, n, first uint64) ([]byte, error) {
	buf := make([]byte, 0, min(n, first, readChunk))
	for uint64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(n-uint64(len(buf)), readChunk)))
		}
		m, err := r.Read(buf[len(buf):min(uint64(cap(buf)), n)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return buf, err
		}
	}
	if uint64(len(buf)) < n {
		return buf, io.ErrUnexpectedEOF
	}
	return buf, nil
}

// loadSections reads the named DWARF sections (".debug_NAME", or the old
// ".zdebug_NAME") of ef concurrently: decompression dominates the time to
// first answer and the sections are independent. Missing sections map to
// nil.
func loadSections(ef *elf.File, ra io.ReaderAt, names []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(names))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for _, name := range names {
		s := ef.Section(".debug_" + name)
		if s == nil {
			s = ef.Section(".zdebug_" + name)
		}
		if s == nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		wg.Go(func() {
			var b []byte
			err := safely(func() error {
				var err error
				b, err = sectionBytes(ef, ra, s)
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			out[name] = b
		})
	}
	wg.Wait()
	return out, firstErr
}
