// Package xz reads xz data (The .xz File Format, version 1.1.0) with no
// more memory than the caller grants it: a block's header may declare a
// dictionary of 4 GiB for a few bytes of data, and other readers, such as
// github.com/ulikunitz/xz's, allocate what it declares.
//
// [Measure] walks the streams of data in memory and returns what reading
// it costs ([Sizes]: the decompressed size the indexes declare and the
// dictionary that needs) before anything is decompressed, so that a
// caller can reserve it first. [NewReader] decodes, with every block's
// dictionary capped at what the caller gives; a dictionary larger than
// everything the caller will read is never used.
//
// # Security
//
// Neither function allocates from a length it has not checked against
// the bytes that hold it, except the dictionary, which NewReader caps.
// Both fail, with an error wrapping [ErrFormat], on anything they do not
// understand; neither panics.
package xz

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"

	"github.com/ulikunitz/xz/lzma"
)

// ErrFormat is wrapped by every error about malformed or unsupported xz
// data.
var ErrFormat = errors.New("xz: malformed or unsupported data")

// xz container constants (The .xz File Format 1.1.0, tukaani.org).
var (
	xzMagic     = []byte("\xfd7zXZ\x00")
	xzFooterEnd = []byte("YZ")
)

const (
	xzFilterLZMA2 = 0x21
	checkCRC32    = 0x01
	checkCRC64    = 0x04
	checkSHA256   = 0x0a
)

var crc64Table = crc64.MakeTable(crc64.ECMA)

// NewReader returns a reader of the data decompressed from the xz file in r:
// one or more streams with stream padding, as xz(1) writes and reads
// them, with the LZMA2 filter alone (what xz writes by default, and what
// kernel modules and MiniDebugInfo use). Each block is decoded with a
// dictionary of at most maxDict bytes whatever its header declares — a
// dictionary larger than everything the caller will read is never used,
// so maxDict is the caller's output limit (and at least 4 KiB). Block,
// index and footer are checked as xz(1) does, CRC32, CRC64 and SHA-256
// checks verified (other check types skipped). Reading allocates the
// dictionary and the decoder's state per block, a block header (at most
// 1 KiB), a record of each block's sizes for the index, and small
// buffers.
//
// The xz container is parsed here rather than by github.com/ulikunitz/xz,
// whose reader raises its configured dictionary to the one a block
// declares; that package's LZMA2 decoder does the decoding.
func NewReader(r io.Reader, maxDict int64) io.Reader {
	x := &xzReader{maxDict: max(min(maxDict, lzma.MaxDictCap), lzma.MinDictCap)}
	x.in.r = bufio.NewReader(r)
	return x
}

type xzReader struct {
	in      countReader
	maxDict int64
	streams int
	inBlock bool
	flags   [2]byte // of the current stream
	blk     xzBlock
	records []xzRecord // blocks of the current stream, for its index
	err     error
}

type xzRecord struct{ unpadded, uncompressed int64 }

// xzBlock is the block being decoded.
type xzBlock struct {
	lz                *lzma.Reader2
	hdrSize, start    int64 // header size; input offset of the compressed data
	out               int64
	compSize, outSize int64 // declared, -1 when absent
	check             hash.Hash
}

// countReader counts what is consumed from a buffered reader, so that
// block sizes can be checked against the header and the index.
type countReader struct {
	r *bufio.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

func xzErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// eof turns io.EOF inside a structure into io.ErrUnexpectedEOF.
func eof(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (x *xzReader) Read(p []byte) (int, error) {
	for x.err == nil {
		if !x.inBlock {
			x.err = wrap(x.next())
			continue
		}
		n, err := x.blk.lz.Read(p)
		x.blk.out += int64(n)
		if x.blk.check != nil {
			x.blk.check.Write(p[:n])
		}
		if x.blk.outSize >= 0 && x.blk.out > x.blk.outSize {
			err = xzErr("block decompresses to more than the %d bytes its header declares", x.blk.outSize)
		}
		if err == io.EOF {
			err = x.endBlock()
		}
		x.err = wrap(eof(err))
		if n > 0 || len(p) == 0 {
			return n, nil
		}
	}
	return 0, x.err
}

// wrap makes every error but the end of the input wrap ErrFormat.
func wrap(err error) error {
	if err == nil || err == io.EOF || errors.Is(err, ErrFormat) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrFormat, err)
}

// next reads what comes between blocks: a stream header, a block header,
// or an index and footer followed by stream padding, another stream or
// the end of the input (io.EOF).
func (x *xzReader) next() error {
	if x.streams == 0 {
		var h [12]byte
		if _, err := io.ReadFull(&x.in, h[:]); err != nil {
			return eof(err)
		}
		return x.streamHeader(h)
	}
	b, err := x.in.ReadByte()
	if err != nil {
		return eof(err)
	}
	if b == 0 {
		if err := x.index(); err != nil {
			return err
		}
		return x.afterStream()
	}
	return x.startBlock(b)
}

func (x *xzReader) streamHeader(h [12]byte) error {
	if !bytes.Equal(h[:6], xzMagic) {
		return xzErr("no xz stream header")
	}
	if binary.LittleEndian.Uint32(h[8:]) != crc32.ChecksumIEEE(h[6:8]) {
		return xzErr("stream header CRC32 mismatch")
	}
	if h[6] != 0 || h[7]&0xf0 != 0 {
		return xzErr("unsupported stream flags %#x %#x", h[6], h[7])
	}
	x.flags = [2]byte{h[6], h[7]}
	x.streams++
	x.records = x.records[:0]
	return nil
}

// afterStream skips stream padding (zeros, four at a time) up to the next
// stream or the end of the input.
func (x *xzReader) afterStream() error {
	for {
		var h [12]byte
		n, err := io.ReadFull(&x.in, h[:4])
		switch {
		case n == 0 && err == io.EOF:
			return io.EOF
		case err != nil:
			return xzErr("stream padding is not a multiple of four bytes")
		case [4]byte(h[:4]) == [4]byte{}:
			continue
		}
		if _, err := io.ReadFull(&x.in, h[4:]); err != nil {
			return eof(err)
		}
		return x.streamHeader(h)
	}
}

// startBlock reads a block header whose first byte is b and starts its
// LZMA2 decoder with the capped dictionary.
func (x *xzReader) startBlock(b byte) error {
	size := (int64(b) + 1) * 4
	hdr := make([]byte, size)
	hdr[0] = b
	if _, err := io.ReadFull(&x.in, hdr[1:]); err != nil {
		return eof(err)
	}
	if binary.LittleEndian.Uint32(hdr[size-4:]) != crc32.ChecksumIEEE(hdr[:size-4]) {
		return xzErr("block header CRC32 mismatch")
	}
	flags := hdr[1]
	if flags&0x3c != 0 {
		return xzErr("unsupported block flags %#x", flags)
	}
	p := hdr[2 : size-4]
	blk := xzBlock{hdrSize: size, compSize: -1, outSize: -1}
	var err error
	if flags&0x40 != 0 {
		if blk.compSize, p, err = uvarint(p); err != nil || blk.compSize == 0 {
			return xzErr("bad compressed size in block header")
		}
	}
	if flags&0x80 != 0 {
		if blk.outSize, p, err = uvarint(p); err != nil {
			return xzErr("bad uncompressed size in block header")
		}
	}
	dict, p, err := lzma2Filter(p, int(flags&3)+1)
	if err != nil {
		return err
	}
	for _, c := range p {
		if c != 0 {
			return xzErr("non-zero block header padding")
		}
	}
	if blk.check, err = newCheck(x.flags[1]); err != nil {
		return err
	}
	blk.start = x.in.n
	if blk.lz, err = (lzma.Reader2Config{DictCap: int(min(dict, x.maxDict))}).NewReader2(&x.in); err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	x.blk, x.inBlock = blk, true
	return nil
}

// lzma2Filter reads the filter flags of a block header: the LZMA2 filter
// alone, whose one property byte encodes the dictionary size.
func lzma2Filter(p []byte, n int) (dict int64, rest []byte, err error) {
	if n != 1 {
		return 0, nil, xzErr("%d filters; only LZMA2 alone is supported", n)
	}
	id, p, err := uvarint(p)
	if err != nil {
		return 0, nil, xzErr("bad filter id")
	}
	psize, p, err := uvarint(p)
	if err != nil || id != xzFilterLZMA2 || psize != 1 || len(p) < 1 {
		return 0, nil, xzErr("unsupported filter %#x; only LZMA2 is supported", id)
	}
	if p[0] > 40 {
		return 0, nil, xzErr("bad LZMA2 dictionary size %#x", p[0])
	}
	return dictSize(p[0]), p[1:], nil
}

// endBlock checks a block's sizes, padding and check once its LZMA2 data
// has ended.
func (x *xzReader) endBlock() error {
	b := &x.blk
	x.inBlock = false
	comp := x.in.n - b.start
	if (b.compSize >= 0 && comp != b.compSize) || (b.outSize >= 0 && b.out != b.outSize) {
		return xzErr("block sizes differ from its header")
	}
	for i := (4 - (b.hdrSize+comp)%4) % 4; i > 0; i-- {
		if c, err := x.in.ReadByte(); err != nil || c != 0 {
			return xzErr("bad block padding")
		}
	}
	size := checkSize(x.flags[1])
	got := make([]byte, size)
	if _, err := io.ReadFull(&x.in, got); err != nil {
		return eof(err)
	}
	if b.check != nil && !bytes.Equal(got, checkSum(b.check)) {
		return xzErr("block check mismatch")
	}
	x.records = append(x.records, xzRecord{b.hdrSize + comp + size, b.out})
	b.lz = nil
	return nil
}

// index reads a stream's index (its indicator byte already read) and
// footer, and compares them with the blocks decoded.
func (x *xzReader) index() error {
	start := x.in.n - 1
	crc := crc32.NewIEEE()
	crc.Write([]byte{0})
	r := &hashByteReader{r: &x.in, h: crc}
	n, err := readUvarint(r)
	if err != nil || n != int64(len(x.records)) {
		return xzErr("index lists other blocks than the stream holds")
	}
	for _, rec := range x.records {
		u, err1 := readUvarint(r)
		o, err2 := readUvarint(r)
		if err1 != nil || err2 != nil || u != rec.unpadded || o != rec.uncompressed {
			return xzErr("index lists other blocks than the stream holds")
		}
	}
	for (x.in.n-start)%4 != 0 {
		if c, err := r.ReadByte(); err != nil || c != 0 {
			return xzErr("bad index padding")
		}
	}
	var tail [4 + 12]byte
	if _, err := io.ReadFull(&x.in, tail[:]); err != nil {
		return eof(err)
	}
	if binary.LittleEndian.Uint32(tail[:4]) != crc.Sum32() {
		return xzErr("index CRC32 mismatch")
	}
	f := tail[4:]
	backward := (int64(binary.LittleEndian.Uint32(f[4:])) + 1) * 4
	switch {
	case binary.LittleEndian.Uint32(f) != crc32.ChecksumIEEE(f[4:10]):
		return xzErr("stream footer CRC32 mismatch")
	case !bytes.Equal(f[10:], xzFooterEnd):
		return xzErr("no stream footer")
	case f[8] != x.flags[0] || f[9] != x.flags[1]:
		return xzErr("stream footer flags differ from the header's")
	case backward != x.in.n-12-start:
		return xzErr("stream footer gives the index a wrong size")
	}
	return nil
}

// hashByteReader hashes the bytes it reads.
type hashByteReader struct {
	r io.ByteReader
	h hash.Hash
}

func (h *hashByteReader) ReadByte() (byte, error) {
	b, err := h.r.ReadByte()
	if err == nil {
		h.h.Write([]byte{b})
	}
	return b, err
}

// uvarint decodes the xz format's multibyte integer at the start of p.
func uvarint(p []byte) (int64, []byte, error) {
	v, err := readUvarint(bytes.NewReader(p))
	if err != nil {
		return 0, nil, err
	}
	n := 1
	for i := 0; i < len(p) && p[i]&0x80 != 0; i++ {
		n++
	}
	return v, p[n:], nil
}

// readUvarint reads a multibyte integer: at most nine bytes of seven bits,
// least significant first, without a trailing zero byte.
func readUvarint(r io.ByteReader) (int64, error) {
	var v uint64
	for i := range 9 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, eof(err)
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			if b == 0 && i > 0 {
				return 0, xzErr("bad integer")
			}
			return int64(v), nil
		}
	}
	return 0, xzErr("integer longer than nine bytes")
}

// checkSize is the size of a block's check for check type t.
func checkSize(t byte) int64 {
	if t == 0 {
		return 0
	}
	return 4 << ((t - 1) / 3)
}

func newCheck(t byte) (hash.Hash, error) {
	switch t {
	case checkCRC32:
		return crc32.NewIEEE(), nil
	case checkCRC64:
		return crc64.New(crc64Table), nil
	case checkSHA256:
		return sha256.New(), nil
	}
	return nil, nil // none, or a type we cannot verify: skipped, as xz --no-warn
}

// checkSum is h's sum as xz stores it: CRCs little-endian.
func checkSum(h hash.Hash) []byte {
	switch h := h.(type) {
	case hash.Hash32:
		return binary.LittleEndian.AppendUint32(nil, h.Sum32())
	case hash.Hash64:
		return binary.LittleEndian.AppendUint64(nil, h.Sum64())
	}
	return h.Sum(nil)
}
