package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
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

// maxAnonSection is the largest decompressed section put outside the Go
// heap; larger ones (none seen) go through the growing buffer below.
const maxAnonSection = 4 << 30

// sectionBytes returns the contents of s (read through ra, the file ef was
// parsed from: debug/elf gives compressed sections no raw reader),
// decompressing SHF_COMPRESSED sections (zlib with klauspost/compress,
// which is about twice as fast as compress/flate, and zstd) and GNU's
// older .zdebug_* sections itself, instead of through debug/elf, whose
// Section.Data knows only the former; other sections come from
// Section.Data. With rs non-nil, the bytes are kept outside the Go heap
// (see region) where possible: an uncompressed section as a mapping of
// the file, a compressed one decompressed into anonymous memory; their
// regions are added to rs.
//
// A zlib section is decompressed by our inflater (inflate.go); with
// resumable, it records checkpoints, so that the region can later fill any
// range of its bytes again alone (region.ix).
//
// With early (and resumable), the section is given back as soon as it is
// decompressed (see earlySections).
func sectionBytes(ef *elf.File, ra io.ReaderAt, s *elf.Section, rs *regionSet, resumable, early bool) ([]byte, error) {
	plain := func() ([]byte, error) {
		if rs != nil {
			if d, ok := mapSection(rs, osFile(ra), s); ok {
				return d, nil
			}
		}
		return s.Data()
	}
	raw := io.NewSectionReader(ra, int64(s.Offset), int64(s.FileSize))
	var hdr [24]byte
	var (
		n    int // header bytes before the compressed stream
		typ  elf.CompressionType
		size uint64 // declared decompressed size
	)
	switch {
	case s.Flags&elf.SHF_COMPRESSED != 0:
		n = 24
		if ef.Class == elf.ELFCLASS32 {
			n = 12
		}
		if s.FileSize < uint64(n) {
			return nil, fmt.Errorf("%w: section %s at offset %#x: compression header truncated", ErrMalformed, s.Name, s.Offset)
		}
		if _, err := raw.ReadAt(hdr[:n], 0); err != nil {
			return nil, fmt.Errorf("section %s at offset %#x: %w", s.Name, s.Offset, err)
		}
		bo := ef.ByteOrder
		if n == 24 {
			typ, size = elf.CompressionType(bo.Uint32(hdr[0:])), bo.Uint64(hdr[8:])
		} else {
			typ, size = elf.CompressionType(bo.Uint32(hdr[0:])), uint64(bo.Uint32(hdr[4:]))
		}
	case strings.HasPrefix(s.Name, ".zdebug_") && s.Type != elf.SHT_NOBITS:
		// The GNU format that predates SHF_COMPRESSED (gcc
		// -gz=zlib-gnu, objcopy --compress-debug-sections=zlib-gnu):
		// "ZLIB", the decompressed size as 8 big-endian bytes, then a
		// zlib stream, whatever the file's byte order. A .zdebug_
		// section without the magic is stored as is, as binutils
		// reads it (bfd_is_section_compressed_info, bfd/compress.c).
		n = 12
		if s.FileSize < uint64(n) {
			return plain()
		}
		if _, err := raw.ReadAt(hdr[:n], 0); err != nil {
			return nil, fmt.Errorf("section %s at offset %#x: %w", s.Name, s.Offset, err)
		}
		if string(hdr[:4]) != "ZLIB" {
			return plain()
		}
		typ, size = elf.COMPRESS_ZLIB, binary.BigEndian.Uint64(hdr[4:])
	default:
		return plain()
	}
	comp := s.FileSize - uint64(n)
	if size > comp*maxInflate+4096 || size > 1<<36 {
		return nil, fmt.Errorf("%w: section %s at offset %#x: claims %d bytes from %d compressed", ErrMalformed, s.Name, s.Offset, size, comp)
	}
	// open returns a fresh decompressing reader of the section and the
	// function that frees it: the section may be decompressed again
	// later into the same memory (region.refill).
	open := func() (io.Reader, func(), error) {
		src := io.NewSectionReader(raw, int64(n), int64(comp))
		switch typ {
		case elf.COMPRESS_ZLIB:
			r, err := zlib.NewReader(src)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: section %s at offset %#x: %v", ErrMalformed, s.Name, s.Offset, err)
			}
			return r, func() {}, nil
		case elf.COMPRESS_ZSTD:
			r, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(size+1<<20))
			if err != nil {
				return nil, nil, fmt.Errorf("%w: section %s at offset %#x: %v", ErrMalformed, s.Name, s.Offset, err)
			}
			return r, r.Close, nil
		}
		return nil, nil, nil
	}
	if typ != elf.COMPRESS_ZLIB && typ != elf.COMPRESS_ZSTD {
		return s.Data() // let debug/elf decide (and report) what it is
	}
	if rs != nil && size <= maxAnonSection {
		// Populate the mapping when the declared size is plausible
		// (DWARF compresses 3 to 5 times); a larger claim may be a
		// lie, whose untouched pages must then cost nothing.
		if r, err := mapAnon(int64(size), size <= comp*32); err == nil {
			r.data = r.data[:size:size]
			if err := fillRegion(r, s, raw, int64(n), int64(comp), typ, open, resumable, fileUnchanged(ra)); err != nil {
				r.unmap()
				return nil, err
			}
			if early && r.ix != nil {
				r.dropEarly(ef.ByteOrder)
			}
			rs.add(r)
			return r.data, nil
		}
	}
	zr, done, err := open()
	if err != nil {
		return nil, err
	}
	defer done()
	// Trust the declared size only as far as the data backs it: start
	// from what a typical ratio gives and grow as bytes actually arrive,
	// so a header that lies costs no more than the real stream.
	out := make([]byte, 0, min(size, comp*16+4096))
	for uint64(len(out)) < size {
		if len(out) == cap(out) {
			out = append(out, 0)[:len(out)]
		}
		m, err := zr.Read(out[len(out):min(uint64(cap(out)), size)])
		out = out[:len(out)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: section %s at offset %#x: %v", ErrMalformed, s.Name, s.Offset, err)
		}
	}
	if uint64(len(out)) != size {
		return nil, fmt.Errorf("%w: section %s at offset %#x: decompresses to %d bytes, header says %d", ErrMalformed, s.Name, s.Offset, len(out), size)
	}
	return out, nil
}

// resumableSections are the DWARF sections whose pages sectionDrop gives
// back as units are decoded: decompressed by our inflater, they record
// checkpoints, so that a unit's bytes can be decompressed again alone.
// The others are read at every decode and stay whole.
var resumableSections = map[string]bool{"info": true, "line": true, "rnglists": true}

// earlySections are resumable sections nothing reads while the index
// loads (.debug_line is read only by decodes, which fill what they need):
// they are given back as soon as they are decompressed, rather than once
// the unit table is built, which for the Go compiler takes away 4 MB of
// the load's peak (region.dropEarly).
var earlySections = map[string]bool{"line": true}

// loadSections reads the named DWARF sections (".debug_NAME", or the old
// ".zdebug_NAME") of ef concurrently: decompression dominates the time to
// first answer and the sections are independent. Missing sections map to
// nil. rs is as for sectionBytes.
//
// They are read in two waves: first the sections given back as soon as
// they are read (earlySections) with those that stay whole anyway (not
// resumable), then the resumable ones, which stay whole until the unit
// table is built. Read all at once, .debug_line was whole (and being
// placed, retarget) while .debug_info and .debug_rnglists were: for the Go
// compiler, 13.5 MB of sections at once, the batch's peak.
func loadSections(ef *elf.File, ra io.ReaderAt, names []string, rs *regionSet) (map[string][]byte, error) {
	out := make(map[string][]byte, len(names))
	var mu sync.Mutex
	var firstErr error
	wave := func(names []string) {
		var wg sync.WaitGroup
		for _, name := range names {
			s := ef.Section(".debug_" + name)
			if s == nil {
				s = ef.Section(".zdebug_" + name)
			}
			if s == nil || s.Type == elf.SHT_NOBITS {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if testHookLoadSection != nil {
					testHookLoadSection(name, false)
					defer testHookLoadSection(name, true)
				}
				var b []byte
				err := safely(s.Name, func() error {
					var err error
					b, err = sectionBytes(ef, ra, s, rs, resumableSections[name], earlySections[name])
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
			}()
		}
		wg.Wait()
	}
	var first, second []string
	for _, name := range names {
		if resumableSections[name] && !earlySections[name] {
			second = append(second, name)
		} else {
			first = append(first, name)
		}
	}
	wave(first)
	if firstErr == nil {
		wave(second)
	}
	return out, firstErr
}

// testHookLoadSection, when set, is told as loadSections starts and ends
// reading each section (tests; called from the reading goroutines).
var testHookLoadSection func(name string, done bool)

// fillRegion decompresses the section s (the stream at off, comp bytes,
// in raw) into r.data and sets r.refill. A zlib stream goes through our
// inflater: with resumable, the region keeps its checkpoints and refills
// only the range asked (r.ix); otherwise a refill decompresses it
// whole again. zstd goes through klauspost/compress, and its refill is
// whole: resuming a zstd stream mid-frame would need the same work for
// zstd blocks, which no producer here makes worth it (objcopy writes one
// frame per section).
//
// A partial refill decompresses from the file again with no checksum to
// check (the Adler-32 covers the whole stream), so it first checks with
// unchanged that the file is still the one read at load: a binary rebuilt
// in place fails the decode that needed the fill instead of giving other
// bytes. A section whose checkpoints lie more than partialMaxGap apart
// (a producer writing few, huge deflate blocks) refills whole instead:
// each fill would decode most of it.
func fillRegion(r *region, s *elf.Section, raw io.ReaderAt, off, comp int64, typ elf.CompressionType, open func() (io.Reader, func(), error), resumable bool, unchanged func() error) error {
	if typ == elf.COMPRESS_ZLIB {
		src := inflateSrc{src: raw, off: off, n: comp, name: s.Name, secOff: s.Offset}
		interval := int64(0)
		if resumable {
			interval = inflateInterval
		}
		ix, err := inflateZlib(src, r.data, interval)
		if err != nil {
			return err
		}
		if resumable && ix.maxGap() > partialMaxGap {
			resumable = false
		}
		if !resumable {
			r.refill = func(lo, hi int) error {
				_, err := inflateZlib(src, r.data, 0)
				return err
			}
			return nil
		}
		r.ix = ix
		r.refill = func(lo, hi int) error {
			if err := unchanged(); err != nil {
				return err
			}
			return ix.fill(r.data, lo, hi)
		}
		return nil
	}
	fill := func(dst []byte) error {
		zr, done, err := open()
		if err != nil {
			return err
		}
		defer done()
		n, err := io.ReadFull(zr, dst)
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return fmt.Errorf("%w: section %s at offset %#x: decompresses to %d bytes, header says %d", ErrMalformed, s.Name, s.Offset, n, len(dst))
		}
		if err != nil {
			return fmt.Errorf("%w: section %s at offset %#x: %v", ErrMalformed, s.Name, s.Offset, err)
		}
		return nil
	}
	r.refill = func(lo, hi int) error { return fill(r.data) }
	return fill(r.data)
}

// partialMaxGap is the most output between checkpoints (or the ends) for
// which a section refills by range.
const partialMaxGap = 4 << 20

// fileUnchanged returns a check that the file behind ra (when it is one)
// still has the size and modification time it has now.
func fileUnchanged(ra io.ReaderAt) func() error {
	f := osFile(ra)
	if f == nil {
		return func() error { return nil }
	}
	st0, err := f.Stat()
	if err != nil {
		return func() error { return nil }
	}
	return func() error {
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrMalformed, f.Name(), err)
		}
		if st.Size() != st0.Size() || !st.ModTime().Equal(st0.ModTime()) {
			return fmt.Errorf("%w: %s changed since it was opened (size or modification time): its compressed DWARF cannot be read again", ErrMalformed, f.Name())
		}
		return nil
	}
}
