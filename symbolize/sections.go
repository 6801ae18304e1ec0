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

	"github.com/perfcheck/perfcheck/internal/budget"
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
// is faster than compress/zlib's (bench/README.md). The declared size of a
// compressed section is reserved from a's budget before anything is allocated;
// cost is what stays reserved, for the caller to release when it drops
// the data.
func sectionBytes(ef *elf.File, ra io.ReaderAt, s *elf.Section, a account) (data []byte, cost int64, err error) {
	c, ok, err := compressionOf(ef, ra, s)
	if err != nil {
		return nil, 0, err
	}
	if !ok || c.typ != elf.COMPRESS_ZLIB && c.typ != elf.COMPRESS_ZSTD {
		// Stored as is, or a type debug/elf decides (and reports).
		d, err := sectionData(s)
		if err != nil {
			return nil, 0, fmt.Errorf("section %s at offset %#x: %w", s.Name, s.Offset, err)
		}
		return d, 0, nil
	}
	if err := c.reserve(s, a); err != nil {
		return nil, 0, err
	}
	defer func() {
		if data == nil { // an error, or a panic of the decompressor
			a.bud.Release(int64(c.size))
		}
	}()
	d, err := c.read(ra, s)
	if err != nil {
		return nil, 0, err
	}
	return d, int64(c.size), nil
}

// reserve checks the declared size of s, compressed as c, and reserves it
// from a's budget.
func (c compressed) reserve(s *elf.Section, a account) error {
	if c.size > uint64(c.n)*maxInflate+4096 || c.size > maxSection {
		return fmt.Errorf("section %s at offset %#x: %w: claims %d bytes from %d compressed", s.Name, s.Offset, ErrMalformed, c.size, c.n)
	}
	return a.reserve(int64(c.size), fmt.Sprintf("section %s at offset %#x", s.Name, s.Offset))
}

// account is the run's budget as one file draws from it: its reservations
// name the file, so that a refusal says which file and which section.
type account struct {
	bud  *budget.Budget
	file string
}

func (a account) reserve(n int64, what string) error { return a.bud.Reserve(n, a.file, what) }

// named prefixes err with where it happened, except a budget refusal,
// which names its file and section already.
func named(where string, err error) error {
	var be *budget.Error
	if err == nil || errors.As(err, &be) {
		return err
	}
	return fmt.Errorf("%s: %w", where, err)
}

// reserveCompressed reserves from a's budget the declared sizes of the compressed
// sections of ef for which which returns true, and returns their total:
// debug/elf decompresses such sections at once when they are read
// (Section.Data, File.Symbols, File.DWARF). On error nothing stays
// reserved.
func reserveCompressed(ef *elf.File, ra io.ReaderAt, a account, which func(*elf.Section) bool) (int64, error) {
	var total int64
	for _, s := range ef.Sections {
		if !which(s) {
			continue
		}
		c, ok, err := compressionOf(ef, ra, s)
		if err == nil && !ok {
			continue
		}
		if err == nil {
			err = c.reserve(s, a)
		}
		if err != nil {
			a.bud.Release(total)
			return 0, err
		}
		total += int64(c.size)
	}
	return total, nil
}

// isDWARFSection reports whether s is a DWARF section as linkers and
// objcopy write them: .debug_* or .zdebug_*, PROGBITS, not loaded. Only
// those are read as DWARF: by loadSections, which reserves what it
// decompresses, or for a relocatable file by elf.File.DWARF. Every other
// compressed section may be decompressed by debug/elf when something reads
// its type or name (a symbol table, a note, .gopclntab).
func isDWARFSection(s *elf.Section) bool {
	return (strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_")) &&
		s.Type == elf.SHT_PROGBITS && s.Flags&elf.SHF_ALLOC == 0
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

// read decompresses the stream of s. Its declared size has been reserved
// (see reserve): it is allocated at once.
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
	out, err := readSized(r, c.size, c.size)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("section %s at offset %#x: %w: decompresses to %d bytes, header says %d: %w", s.Name, s.Offset, ErrMalformed, len(out), c.size, err)
	}
	if err != nil {
		return nil, fmt.Errorf("section %s at offset %#x: %w: %w", s.Name, s.Offset, ErrMalformed, err)
	}
	return out, nil
}

// readSized reads n bytes from r. It allocates at first what the caller
// trusts (first: all of n when it is reserved from the budget) and grows
// the buffer, by at most readChunk at a time, only as the bytes arrive,
// as internal/saferio.ReadData reads: a size that lies costs no more than
// the data behind it and first. A stream that ends early gives
// io.ErrUnexpectedEOF, with what was read.
func readSized(r io.Reader, n, first uint64) ([]byte, error) {
	buf := make([]byte, 0, min(n, first))
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
// nil. cost is what the decompressed ones hold of a's budget; on error nothing
// stays reserved.
func loadSections(ef *elf.File, ra io.ReaderAt, names []string, a account) (out map[string][]byte, cost int64, err error) {
	out = make(map[string][]byte, len(names))
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
			var n int64
			err := safely(func() error {
				var err error
				b, n, err = sectionBytes(ef, ra, s, a)
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			cost += n
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
	if firstErr != nil {
		a.bud.Release(cost)
		return nil, 0, firstErr
	}
	return out, cost, nil
}
