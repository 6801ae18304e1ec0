package xz

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/ulikunitz/xz/lzma"
)

// Sizes are what reading xz data costs.
type Sizes struct {
	// Data is the decompressed size the indexes declare.
	Data int64
	// Dict is the largest dictionary NewReader allocates for a block
	// when its cap is Data: the smaller of what the block declares and
	// Data, and never less than the decoder's smallest.
	Dict int64
}

// Measure walks the xz data in src (one or more streams, with stream
// padding, as xz(1) writes and reads them) and returns what reading it
// with NewReader(r, Sizes.Data) costs, without decompressing anything. The
// walk reads only what the format's lengths delimit (headers, LZMA2 chunk
// headers, indexes, footers), checks each header's and index's CRC32 and
// that each index lists the blocks its stream holds; anything it does not
// understand is an error wrapping ErrFormat. The data itself is checked
// only when it is read: a reader of it must stop after Data bytes and
// treat more as an error.
func Measure(src []byte) (Sizes, error) {
	if len(src) == 0 {
		return Sizes{}, fmt.Errorf("%w: no stream", ErrFormat)
	}
	w := walker{b: src}
	for w.pos < len(w.b) {
		if err := w.stream(); err != nil {
			return Sizes{}, err
		}
	}
	var sz Sizes
	var dict int64
	for _, b := range w.blocks {
		if b.size > math.MaxInt64-sz.Data {
			return Sizes{}, fmt.Errorf("%w: the indexes declare more than 2^63 bytes", ErrFormat)
		}
		sz.Data += b.size
		dict = max(dict, dictSize(src[b.dictAt]))
	}
	sz.Dict = max(min(dict, sz.Data), lzma.MinDictCap)
	return sz, nil
}

// dictSize is the dictionary size LZMA2's property byte code means.
func dictSize(code byte) int64 {
	if code >= 40 {
		return 1<<32 - 1
	}
	return int64(2|code&1) << (code/2 + 11)
}

// block is one block of the walk.
type block struct {
	hdr, hdrLen int   // the block header
	dictAt      int   // its LZMA2 dictionary code
	unpadded    int64 // header, compressed data and check, as the index counts them
	size        int64 // decompressed size, from the index
}

// walker walks xz streams for Measure.
type walker struct {
	b      []byte
	pos    int
	blocks []block
}

func (w *walker) fail(format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrFormat, w.pos, fmt.Sprintf(format, args...))
}

// take returns the next n bytes, nil past the end.
func (w *walker) take(n int) []byte {
	if n < 0 || n > len(w.b)-w.pos {
		return nil
	}
	p := w.b[w.pos : w.pos+n]
	w.pos += n
	return p
}

// vli reads a variable-length integer (at most 9 bytes).
func (w *walker) vli() (int64, bool) {
	var v int64
	for i := 0; i < 9 && w.pos < len(w.b); i++ {
		c := w.b[w.pos]
		w.pos++
		v |= int64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i == 0 || c != 0
		}
	}
	return 0, false
}

// stream walks one stream and the padding after it.
func (w *walker) stream() error {
	h := w.take(12)
	if h == nil || string(h[:6]) != "\xfd7zXZ\x00" {
		return w.fail("no stream header")
	}
	if h[6] != 0 || h[7] > 0x0f || crc32.ChecksumIEEE(h[6:8]) != binary.LittleEndian.Uint32(h[8:]) {
		return w.fail("bad stream flags")
	}
	check := int(checkSize(h[7]))
	first := len(w.blocks)
	for {
		if w.pos >= len(w.b) {
			return w.fail("stream cut short")
		}
		if w.b[w.pos] == 0 { // the index indicator
			break
		}
		if err := w.block(check); err != nil {
			return err
		}
	}
	if err := w.index(w.blocks[first:]); err != nil {
		return err
	}
	if w.take(12) == nil {
		return w.fail("no stream footer")
	}
	for w.pos < len(w.b) && w.b[w.pos] == 0 {
		if w.take(4) == nil || !bytes.Equal(w.b[w.pos-4:w.pos], []byte{0, 0, 0, 0}) {
			return w.fail("bad stream padding")
		}
	}
	return nil
}

// block walks one block: its header, which must declare one filter,
// LZMA2, then the LZMA2 chunks to the end marker, padding and the check.
func (w *walker) block(check int) error {
	b := block{hdr: w.pos, hdrLen: (int(w.b[w.pos]) + 1) * 4}
	h := w.take(b.hdrLen)
	if h == nil || crc32.ChecksumIEEE(h[:len(h)-4]) != binary.LittleEndian.Uint32(h[len(h)-4:]) {
		return w.fail("bad block header")
	}
	hw := walker{b: h[:len(h)-4], pos: 2}
	flags := h[1]
	if flags&0x3c != 0 || flags&3 != 0 {
		return w.fail("block flags %#x: only one filter, LZMA2, is supported", flags)
	}
	packed := int64(-1)
	if flags&0x40 != 0 {
		v, ok := hw.vli()
		if !ok {
			return w.fail("bad compressed size")
		}
		packed = v
	}
	if flags&0x80 != 0 {
		if _, ok := hw.vli(); !ok {
			return w.fail("bad uncompressed size")
		}
	}
	id, ok1 := hw.vli()
	props, ok2 := hw.vli()
	if !ok1 || !ok2 || id != 0x21 || props != 1 || hw.pos >= len(hw.b) {
		return w.fail("filter %#x: only LZMA2 is supported", id)
	}
	b.dictAt = b.hdr + hw.pos
	if w.b[b.dictAt] > 40 {
		return w.fail("bad LZMA2 dictionary code %d", w.b[b.dictAt])
	}
	start := w.pos
	if err := w.lzma2(); err != nil {
		return err
	}
	n := w.pos - start
	if packed >= 0 && packed != int64(n) {
		return w.fail("block declares %d compressed bytes, holds %d", packed, n)
	}
	b.unpadded = int64(b.hdrLen + n + check)
	if w.take((4-n%4)%4+check) == nil {
		return w.fail("block cut short")
	}
	w.blocks = append(w.blocks, b)
	return nil
}

// lzma2 skips LZMA2 chunks up to and including the end marker.
func (w *walker) lzma2() error {
	for {
		c := w.take(1)
		switch {
		case c == nil:
			return w.fail("LZMA2 data cut short")
		case c[0] == 0:
			return nil
		case c[0] == 1 || c[0] == 2: // uncompressed chunk
			s := w.take(2)
			if s == nil || w.take(int(binary.BigEndian.Uint16(s))+1) == nil {
				return w.fail("LZMA2 chunk cut short")
			}
		case c[0] >= 0x80: // LZMA chunk
			n := 4 // unpacked and packed sizes
			if c[0] >= 0xc0 {
				n++ // properties
			}
			s := w.take(n)
			if s == nil || w.take(int(binary.BigEndian.Uint16(s[2:]))+1) == nil {
				return w.fail("LZMA2 chunk cut short")
			}
		default:
			return w.fail("bad LZMA2 control byte %#x", c[0])
		}
	}
}

// index walks a stream's index and takes each block's decompressed size
// from it; its records must match the blocks walked.
func (w *walker) index(blocks []block) error {
	start := w.pos
	w.pos++ // the indicator
	n, ok := w.vli()
	if !ok || n != int64(len(blocks)) {
		return w.fail("index lists %d blocks, the stream has %d", n, len(blocks))
	}
	for i := range blocks {
		unpadded, ok1 := w.vli()
		size, ok2 := w.vli()
		if !ok1 || !ok2 || unpadded != blocks[i].unpadded || size < 0 {
			return w.fail("index record %d does not match its block", i)
		}
		blocks[i].size = size
	}
	for (w.pos-start)%4 != 0 {
		if p := w.take(1); p == nil || p[0] != 0 {
			return w.fail("bad index padding")
		}
	}
	if c := w.take(4); c == nil || crc32.ChecksumIEEE(w.b[start:w.pos-4]) != binary.LittleEndian.Uint32(c) {
		return w.fail("bad index")
	}
	return nil
}
