package symbolize

import (
	"encoding/binary"
	"errors"
	"slices"
	"sort"
)

// lineRow is one row of a unit's line table as lookups see it. file is an
// index in unitInfo.files, or rowEnd for an end_sequence row: addresses
// from it up to the next row have no line.
type lineRow struct {
	addr uint64
	file uint32
	line uint32
	col  uint32
}

const rowEnd = ^uint32(0)

func (r *lineRow) end() bool { return r.file == rowEnd }

// lineTable holds a unit's line rows, sorted by address, packed into a
// byte stream: a large binary has over a million rows, which as 16-byte
// structs would outweigh the compressed DWARF they came from. Rows are grouped
// in blocks of lineBlock; each block starts from a known state (its first
// row's address, file 0, line 0, column 0) so that a lookup binary-searches
// the block addresses and decodes at most one block. Each row is
//
//	uvarint(addrDelta<<2 | fileChanged<<1 | colChanged)
//	[uvarint(file)]   when fileChanged
//	varint(lineDelta)
//	[uvarint(col)]    when colChanged
//
// which takes two or three bytes for a typical row.
type lineTable struct {
	blockAddr []uint64 // address of each block's first row
	blockOff  []uint32 // offset of each block in data
	data      []byte
}

// lineBlock is the number of rows per block: the block index (12 bytes a
// block) stays small enough for the cache, and a lookup decodes on average
// 16 rows, from one or two cache lines.
const lineBlock = 32

// errLineOrder is what lineEncoder.add reports for a row whose address is
// below the previous one's: the caller sorts the rows and starts over.
var errLineOrder = errors.New("line rows out of address order")

// lineEncoder appends rows, in address order, to a lineTable it builds;
// table returns a copy at its exact size.
type lineEncoder struct {
	addr []uint64
	off  []uint32
	data []byte
	n    int     // rows in the current block
	prev lineRow // the row last encoded (a block's first is encoded from its base)
	// last is the row last added, encoded or not; there is one when a
	// row is encoded (the first row added always is).
	last lineRow
	tmp  [3 * binary.MaxVarintLen64]byte
}

// add appends r, unless it has the file, line and column of the row added
// before it: a lookup finds the last row at or below an address, and the
// earlier row answers every address r would, the same. Go's line programs
// repeat a row for each is_stmt and prologue_end change (a large share
// of their rows). The order check
// still sees every row, so rows out of order are found as if none was
// left out.
func (e *lineEncoder) add(r lineRow) error {
	added := len(e.addr) > 0
	if added && r.addr < e.last.addr {
		return errLineOrder
	}
	same := added && r.file == e.last.file && r.line == e.last.line && r.col == e.last.col
	e.last = r
	if same {
		return nil
	}
	if e.n == lineBlock || len(e.addr) == 0 {
		if uint64(len(e.data)) > 1<<32-1 {
			return errors.New("line table larger than 4 GiB")
		}
		e.addr = append(e.addr, r.addr)
		e.off = append(e.off, uint32(len(e.data)))
		e.n = 0
		e.prev = lineRow{addr: r.addr}
	}
	d := r.addr - e.prev.addr
	if d >= 1<<62 {
		return errors.New("line table address jumps by more than 2^62")
	}
	h := d << 2
	if r.file != e.prev.file {
		h |= 2
	}
	if r.col != e.prev.col {
		h |= 1
	}
	b := binary.AppendUvarint(e.tmp[:0], h)
	if h&2 != 0 {
		b = binary.AppendUvarint(b, uint64(r.file))
	}
	b = binary.AppendVarint(b, int64(r.line)-int64(e.prev.line))
	if h&1 != 0 {
		b = binary.AppendUvarint(b, uint64(r.col))
	}
	e.data = append(e.data, b...)
	e.prev = r
	e.n++
	return nil
}

// reserve makes room for about n more rows (three bytes a row is
// typical), so that a large unit's table is not grown step by step.
func (e *lineEncoder) reserve(n int) {
	e.addr = slices.Grow(e.addr, n/lineBlock+1)
	e.off = slices.Grow(e.off, n/lineBlock+1)
	e.data = slices.Grow(e.data, 3*n)
}

// lineMark is an encoder's state between two rows (mark, rollback).
type lineMark struct {
	blocks, data, n int
	prev, last      lineRow
}

func (e *lineEncoder) mark() lineMark {
	return lineMark{len(e.addr), len(e.data), e.n, e.prev, e.last}
}

// rollback forgets the rows added since m was taken.
func (e *lineEncoder) rollback(m lineMark) {
	e.addr, e.off, e.data = e.addr[:m.blocks], e.off[:m.blocks], e.data[:m.data]
	e.n, e.prev, e.last = m.n, m.prev, m.last
}

// table returns a copy of the rows added so far, its slices at their
// exact size.
func (e *lineEncoder) table() lineTable {
	return lineTable{blockAddr: slices.Clone(e.addr), blockOff: slices.Clone(e.off), data: slices.Clone(e.data)}
}

// reset empties e, keeping its buffers.
func (e *lineEncoder) reset() {
	*e = lineEncoder{addr: e.addr[:0], off: e.off[:0], data: e.data[:0]}
}

// size is the table's memory in bytes.
func (t *lineTable) size() int {
	return len(t.blockAddr)*8 + len(t.blockOff)*4 + len(t.data)
}

// lookup returns the position (file, line, column, or end of sequence)
// of the last row added whose address is <= addr; ok is false when there
// is none. The row's address may be an earlier one's: a row repeating the
// position before it is not kept (lineEncoder.add).
func (t *lineTable) lookup(addr uint64) (row lineRow, ok bool) {
	ba := t.blockAddr
	b := sort.Search(len(ba), func(i int) bool { return ba[i] > addr }) - 1
	if b < 0 {
		return row, false
	}
	p := t.block(b)
	cur := lineRow{addr: ba[b]}
	for len(p) > 0 {
		next, rest := decodeRow(p, cur)
		if next.addr > addr {
			break
		}
		cur, p, ok = next, rest, true
	}
	return cur, ok
}

// block returns the bytes of block b.
func (t *lineTable) block(b int) []byte {
	if b+1 < len(t.blockOff) {
		return t.data[t.blockOff[b]:t.blockOff[b+1]]
	}
	return t.data[t.blockOff[b]:]
}

// decodeRow decodes the row at the start of p, which follows prev, and
// returns it with the rest of p.
func decodeRow(p []byte, prev lineRow) (lineRow, []byte) {
	h, n := lineUvarint(p)
	p = p[n:]
	r := prev
	r.addr += h >> 2
	if h&2 != 0 {
		v, n := lineUvarint(p)
		p = p[n:]
		r.file = uint32(v)
	}
	v, n := lineUvarint(p)
	p = p[n:]
	r.line = uint32(int64(prev.line) + int64(v>>1^-(v&1))) // zigzag, as binary.AppendVarint
	if h&1 != 0 {
		v, n := lineUvarint(p)
		p = p[n:]
		r.col = uint32(v)
	}
	return r, p
}

// lineUvarint is binary.Uvarint for bytes the encoder wrote; a truncated or
// overlong value (impossible from add) reads as what was decoded so far,
// consuming the rest, so that a loop over a block always ends.
func lineUvarint(p []byte) (uint64, int) {
	if len(p) > 0 && p[0] < 0x80 {
		return uint64(p[0]), 1
	}
	v, n := binary.Uvarint(p)
	if n <= 0 {
		return v, len(p)
	}
	return v, n
}
