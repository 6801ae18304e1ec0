package buildidcache

import (
	"fmt"
	"io"
	"math"
)

// ptNull is an unused program header entry (gABI).
const ptNull = 0

// elfExtent returns how many bytes of the ELF file in r its headers
// account for: the ELF header, the program and section header tables,
// every segment's file image and every section's contents (SHT_NOBITS
// excepted). Bytes past it belong to no part of the ELF file, so nothing
// that reads the file as ELF ever looks at them: a download or a cache
// copy can stop there.
//
// size is how much of the file is available; only the header tables must
// lie within it (segments and sections may end past it), so a file that is
// still arriving can be measured as soon as its tables are in. Separate
// debug files keep the program headers of the binary they were split from
// (objcopy --only-keep-debug), which may describe more bytes than the debug
// file holds: the extent is then larger than the file, never smaller.
func elfExtent(r io.ReaderAt, size int64, name string) (int64, error) {
	e := &elfReader{r: r, size: size, name: name}
	var head [64]byte
	n, err := r.ReadAt(head[:min(size, int64(len(head)))], 0)
	if err != nil && err != io.EOF {
		return 0, e.errf(0, err, "reading the ELF header")
	}
	if n < 16 || string(head[:4]) != "\x7fELF" {
		return 0, fmt.Errorf("%s: %w", orReader(name), ErrNotELF)
	}
	e.head = head[:n]
	h, err := e.header(&Identity{})
	if err != nil {
		return 0, err
	}
	end := h.size
	if err := e.segmentExtent(h, &end); err != nil {
		return 0, err
	}
	shstrndx := h.shstrndx
	secs, err := e.sections(h.shoff, h.shentsize, h.shnum, &shstrndx)
	if err != nil {
		return 0, err
	}
	if len(secs) > 0 {
		end = max(end, h.shoff+int64(len(secs))*h.shentsize)
	}
	for _, s := range secs {
		if s.typ != shtNobits && s.size > 0 {
			end = max(end, addSat(s.off, s.size))
		}
	}
	return end, nil
}

// segmentExtent raises *end to cover the program header table and every
// segment's bytes in the file.
func (e *elfReader) segmentExtent(h elfHeader, end *int64) error {
	if h.phoff == 0 || h.phnum == 0 {
		return nil
	}
	least := int64(32)
	if e.is64 {
		least = 56
	}
	if h.phentsize < least || h.phentsize > maxEntSize {
		return e.errf(h.phoff, nil, "program header size %d is not between %d and %d", h.phentsize, least, maxEntSize)
	}
	tab, err := e.read(h.phoff, h.phnum*h.phentsize, "program header table")
	if err != nil {
		return err
	}
	*end = max(*end, h.phoff+h.phnum*h.phentsize)
	o := e.order
	for i := int64(0); i < h.phnum; i++ {
		b := tab[i*h.phentsize:]
		if o.Uint32(b) == ptNull {
			continue
		}
		var off, filesz uint64
		if e.is64 {
			off, filesz = o.Uint64(b[8:]), o.Uint64(b[32:])
		} else {
			off, filesz = uint64(o.Uint32(b[4:])), uint64(o.Uint32(b[16:]))
		}
		if filesz > 0 {
			*end = max(*end, addSat(int64(min(off, math.MaxInt64)), int64(min(filesz, math.MaxInt64))))
		}
	}
	return nil
}

// headerTablesEnd returns the offset by which the ELF file whose first
// bytes are head has both header tables in, so that elfExtent can measure
// it; ok is false when the header alone cannot tell (extended section
// numbering keeps the count in section 0) or head is too short.
func headerTablesEnd(head []byte) (end int64, ok bool, err error) {
	if len(head) < 16 || string(head[:4]) != "\x7fELF" {
		if len(head) >= 4 && string(head[:4]) != "\x7fELF" {
			return 0, false, ErrNotELF
		}
		return 0, false, nil
	}
	e := &elfReader{head: head, size: int64(len(head))}
	h, err := e.header(&Identity{})
	if err != nil {
		return 0, false, nil // not all of the header is in yet, or bad: elfExtent says
	}
	if h.shoff != 0 && h.shnum == 0 {
		return 0, false, nil
	}
	end = h.size
	if h.phoff != 0 {
		end = max(end, addSat(h.phoff, h.phnum*h.phentsize))
	}
	if h.shoff != 0 {
		end = max(end, addSat(h.shoff, h.shnum*h.shentsize))
	}
	return end, true, nil
}

// addSat adds two non-negative offsets, saturating instead of wrapping.
func addSat(a, b int64) int64 {
	if a < 0 || b < 0 || a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
