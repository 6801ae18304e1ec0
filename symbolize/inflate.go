package symbolize

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"io"
	"math/bits"
	"slices"
	"sort"
	"sync"

	"github.com/klauspost/compress/flate"
)

// An inflater of our own: deflate (RFC 1951) inside zlib framing (RFC
// 1950), as SHF_COMPRESSED ELFCOMPRESS_ZLIB and GNU .zdebug_ sections hold
// it. What neither compress/flate nor klauspost/compress offers is
// resuming: a deflate stream cannot be entered mid-way, but at a block
// boundary the decoder's whole state is the bit position in the input and
// the last 32 KiB of output (the distances a match may reach back). So the
// first, full pass over a section records such checkpoints, one every
// inflateInterval bytes of output or so (which retarget may then move
// next to where fills will start), and a later fill of any output
// range [lo, hi) starts from the last checkpoint at or before lo
// (inflateIndex.fill): a decoded unit's section bytes can then be given
// back and decompressed again alone when needed, instead of the whole
// section (see sectionDrop).
//
// The decoder writes into a sliding buffer (32 KiB of history and
// inflateChunk of new output), whose new bytes are copied to the caller's
// destination, clipped to [lo, hi): a fill writes nothing outside the
// range asked, so pages given back elsewhere in the section stay gone.
// Input is read from the file in inflateInBuf chunks through ReadAt.
//
// Errors wrap ErrMalformed and name the section, its offset and the byte
// of the compressed stream; nothing panics on any input (FuzzInflate), and
// memory is the destination the caller sized from the declared size plus
// the decoder's fixed buffers.

const (
	inflateWindow = 32 << 10 // deflate's largest distance
	inflateChunk  = 32 << 10 // new output between slides of the sliding buffer
	inflateInBuf  = 32 << 10 // compressed bytes read at once
	maxMatch      = 258      // deflate's longest match

	litBits  = 10 // primary table bits, literal/length code
	distBits = 8  // primary table bits, distance code
)

// inflateInterval is the output between checkpoints of the sections that
// refill ranges: each costs a 32 KiB window, and a fill decodes on average
// half an interval before the range it wants (see docs/symbolize.md for
// the measurement behind the figure). A variable for tests, which lower
// it to have checkpoints in small binaries.
var inflateInterval int64 = 256 << 10

// inflateCheckpoint is where decoding can resume: a block header at bit
// bit of the deflate stream, where out bytes had been written. Its window
// (the min(out, 32 KiB) bytes before out) is in inflateIndex.zwin.
type inflateCheckpoint struct {
	bit, out int64
}

// inflateIndex is what a section decompressed by inflateZlib keeps to fill
// ranges of its output again later.
type inflateIndex struct {
	inflateSrc       // the deflate stream, to the end of the section
	size       int64 // decompressed size

	cps []inflateCheckpoint
	// The checkpoints' windows, each deflated on its own (window i is
	// zwin[zoff[i]:zoff[i+1]], min(cps[i].out, 32 KiB) bytes inflated):
	// kept as they are, 32 KiB each, they were 1.3 MB of the Go
	// compiler's batch for as long as any unit is left to decode; DWARF
	// deflates 3 to 4 times, and a fill inflates one window, 32 KiB,
	// on top of the tens or hundreds of KiB it decodes anyway.
	zwin   []byte
	zoff   []uint32
	bounds []inflateCheckpoint // every block boundary, until retarget chooses among them
}

// inflateSrc describes a compressed stream for errors and reads.
type inflateSrc struct {
	src    io.ReaderAt
	off, n int64 // the deflate stream in src
	name   string
	secOff uint64
}

// huffTable is a canonical Huffman code as a lookup table indexed by the
// next input bits (deflate packs codes from their most significant bit,
// so the table is indexed by the bit-reversed code). An entry is
//
//	sym<<16 | n              a code of n bits (n in 1..15) for sym
//	off<<16 | sub<<8 | link  longer codes: a subtable at t[off] indexed by the sub bits after the primary ones
//	0                        no code: the input is corrupt
type huffTable struct {
	t    []uint32
	prim uint
}

const huffLink = 1 << 5

// entry returns the entry for the code at the start of b, the next input
// bits, following the link to a subtable.
func (h *huffTable) entry(b uint64) uint32 {
	e := h.t[b&(1<<h.prim-1)]
	if e&huffLink != 0 {
		e = h.t[e>>16+uint32(b>>h.prim)&(1<<(e>>8&15)-1)]
	}
	return e
}

// build makes t the code of lengths (0: symbol unused). As zlib and
// compress/flate, it accepts a complete code, a single code of length 1,
// and no code at all (which fails when used); an over-subscribed or other
// incomplete code is refused.
func (h *huffTable) build(lengths []uint8, prim uint) bool {
	var count [16]int
	maxLen := 0
	for _, l := range lengths {
		count[l]++
		maxLen = max(maxLen, int(l))
	}
	h.prim = prim
	size := 1 << prim
	if cap(h.t) < size {
		h.t = make([]uint32, size, size*2)
	}
	h.t = h.t[:size]
	clear(h.t)
	if maxLen == 0 {
		return true
	}
	left := 1
	for l := 1; l <= 15; l++ {
		left = left<<1 - count[l]
		if left < 0 {
			return false // over-subscribed
		}
	}
	if left > 0 && !(maxLen == 1 && count[1] == 1) {
		return false
	}
	var next [16]int
	code := 0
	count[0] = 0
	for l := 1; l <= 15; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	subBits := uint(0)
	if maxLen > int(prim) {
		subBits = uint(maxLen) - prim
	}
	for sym, l := range lengths {
		if l == 0 {
			continue
		}
		c := next[l]
		next[l]++
		rev := int(bits.Reverse16(uint16(c)) >> (16 - l))
		e := uint32(sym)<<16 | uint32(l)
		if uint(l) <= prim {
			for i := rev; i < size; i += 1 << l {
				h.t[i] = e
			}
			continue
		}
		p := rev & (size - 1)
		if h.t[p]&huffLink == 0 {
			off := len(h.t)
			h.t = append(h.t, make([]uint32, 1<<subBits)...)
			h.t[p] = uint32(off)<<16 | uint32(subBits)<<8 | huffLink
		}
		off := int(h.t[p] >> 16)
		for i := rev >> prim; i < 1<<subBits; i += 1 << (uint(l) - prim) {
			h.t[off+i] = e
		}
	}
	return true
}

var (
	fixedOnce           sync.Once
	fixedLit, fixedDist huffTable
)

func fixedTables() (*huffTable, *huffTable) {
	fixedOnce.Do(func() {
		var l [288]uint8
		for i := range l {
			switch {
			case i < 144:
				l[i] = 8
			case i < 256:
				l[i] = 9
			case i < 280:
				l[i] = 7
			default:
				l[i] = 8
			}
		}
		fixedLit.build(l[:], litBits)
		var d [32]uint8
		for i := range d {
			d[i] = 5
		}
		fixedDist.build(d[:], distBits)
	})
	return &fixedLit, &fixedDist
}

// Base values and extra bits of length symbols 257..285 and distance
// symbols 0..29 (RFC 1951 section 3.2.5).
var (
	lenBase   = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lenExtra  = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase  = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	codeOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

var errInflateStop = errors.New("range filled")

// inflater is the decoder's state. Buffers are reused through inflaters.
type inflater struct {
	s inflateSrc

	// input
	buf   []byte // inflateInBuf bytes
	in    []byte // buf[:what was read], or zeros past the end of the stream
	inOff int64  // stream offset of in[0]
	ip    int    // next byte of in not yet in bits
	pad   int    // zero bytes supplied past the end of the stream
	b     uint64 // bits not yet consumed, least significant first
	nb    uint   // valid bits in b
	err   error  // sticky: input that could not be read

	// output
	win     []byte // history and new output
	wp      int    // write position in win
	flushed int    // win[:flushed] was handed to the destination
	base    int64  // output offset of win[0]
	lim     int    // flush when wp reaches lim
	dst     []byte // destination, indexed by output offset
	lo, hi  int64  // the range of the output to write into dst
	full    bool   // a full pass: check the size, sum, record checkpoints
	sum     hash.Hash32

	// block boundaries (full pass)
	onCp func(bit, out int64)

	lt, dt, ct huffTable
	lens       [320]uint8
}

var inflaters = sync.Pool{New: func() any {
	return &inflater{
		buf: make([]byte, inflateInBuf),
		win: make([]byte, inflateWindow+inflateChunk+maxMatch),
	}
}}

func (f *inflater) corrupt(msg string) error {
	return fmt.Errorf("%w: section %s at offset %#x: deflate stream: %s at compressed byte %d", ErrMalformed, f.s.name, f.s.secOff, msg, f.bitPos()/8)
}

// bitPos is the position in the stream, in bits, of the next bit to decode.
func (f *inflater) bitPos() int64 { return (f.inOff+int64(f.ip))*8 - int64(f.nb) }

// start sets the input at bit of the stream.
func (f *inflater) start(s inflateSrc, bit int64) {
	f.s, f.err, f.pad = s, nil, 0
	f.in, f.ip, f.b, f.nb = f.buf[:0], 0, 0, 0
	f.inOff = bit / 8
	f.more() // in is empty: reads from inOff
	f.fill()
	if k := uint(bit % 8); k > 0 {
		f.b >>= k
		f.nb -= k
	}
}

// more reads the next input chunk; past the stream's end it supplies
// zeros, so that the decoding loop needs no bound check per symbol, and
// fails once more zeros were supplied than lookahead can explain.
func (f *inflater) more() {
	f.inOff += int64(len(f.in))
	f.ip = 0
	if f.inOff >= f.s.n {
		f.pad += 8
		f.in = zeros8[:]
		if f.pad > 16 && f.err == nil {
			f.err = f.truncated()
		}
		return
	}
	m := int(min(int64(len(f.buf)), f.s.n-f.inOff))
	k, err := f.s.src.ReadAt(f.buf[:m], f.s.off+f.inOff)
	if k < m {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if f.err == nil {
			f.err = fmt.Errorf("%w: section %s at offset %#x: reading the compressed stream: %v", ErrMalformed, f.s.name, f.s.secOff, err)
		}
		clear(f.buf[k:m])
	}
	f.in = f.buf[:m]
}

var zeros8 [8]byte

func (f *inflater) truncated() error {
	return fmt.Errorf("%w: section %s at offset %#x: deflate stream: truncated after %d compressed bytes", ErrMalformed, f.s.name, f.s.secOff, f.s.n)
}

// fill makes at least 56 bits available.
func (f *inflater) fill() {
	for f.nb <= 56 {
		if f.ip >= len(f.in) {
			f.more()
		}
		f.b |= uint64(f.in[f.ip]) << f.nb
		f.ip++
		f.nb += 8
	}
}

func (f *inflater) bits(n uint) uint32 {
	if f.nb < n {
		f.fill()
	}
	v := uint32(f.b & (1<<n - 1))
	f.b >>= n
	f.nb -= n
	return v
}

func (f *inflater) sym(h *huffTable) (uint32, error) {
	if f.nb < 15 {
		f.fill()
	}
	e := h.entry(f.b)
	n := uint(e & 31)
	if n == 0 {
		return 0, f.corrupt("invalid Huffman code")
	}
	f.b >>= n
	f.nb -= n
	return e >> 16, nil
}

// setOutput prepares the sliding buffer for output from offset out, with
// window the bytes before it.
func (f *inflater) setOutput(out int64, window []byte) {
	n := copy(f.win, window)
	f.base = out - int64(n)
	f.wp, f.flushed = n, n
	f.setLim()
}

func (f *inflater) setLim() {
	f.lim = len(f.win) - maxMatch
	if !f.full {
		f.lim = int(min(int64(f.lim), f.hi-f.base))
	}
}

// flush hands win[flushed:wp] to the destination and slides the buffer
// when it is full. It returns errInflateStop once the range asked for is
// written (fills), and an error for output beyond the declared size.
func (f *inflater) flush() error {
	if f.err != nil {
		return f.err
	}
	start, end := f.base+int64(f.flushed), f.base+int64(f.wp)
	if f.full {
		if end > int64(len(f.dst)) {
			return f.corrupt(fmt.Sprintf("more output than the %d bytes declared", len(f.dst)))
		}
		if f.sum != nil {
			f.sum.Write(f.win[f.flushed:f.wp])
		}
	}
	if f.pad > 0 && f.bitPos() > f.s.n*8 {
		return f.truncated()
	}
	if a, b := max(start, f.lo), min(end, f.hi); a < b {
		copy(f.dst[a:b], f.win[a-f.base:b-f.base])
	}
	f.flushed = f.wp
	if !f.full && end >= f.hi {
		return errInflateStop
	}
	if f.wp >= len(f.win)-maxMatch {
		keep := f.wp - inflateWindow
		copy(f.win, f.win[keep:f.wp])
		f.base += int64(keep)
		f.wp -= keep
		f.flushed = f.wp
	}
	f.setLim()
	return nil
}

// block decodes one block, whose three header bits are hdr (BFINAL in
// the low bit, BTYPE above it: RFC 1951 section 3.2.3).
func (f *inflater) block(hdr uint32) error {
	switch hdr >> 1 {
	case 0:
		return f.stored()
	case 1:
		lt, dt := fixedTables()
		return f.huffman(lt, dt)
	case 2:
		if err := f.dynamic(); err != nil {
			return err
		}
		return f.huffman(&f.lt, &f.dt)
	}
	return f.corrupt("reserved block type 3")
}

// run decodes blocks until the final one ends (nil) or, for a fill, until
// the range is written (errInflateStop).
func (f *inflater) run() error {
	for {
		if f.full && f.onCp != nil {
			// Every block boundary is a candidate checkpoint (but
			// the start and the end, which serve no fill).
			if out := f.base + int64(f.wp); out > 0 && out < int64(len(f.dst)) {
				f.onCp(f.bitPos(), out)
			}
		}
		if f.err != nil {
			return f.err
		}
		hdr := f.bits(3)
		if err := f.block(hdr); err != nil {
			return err
		}
		if f.bitPos() > f.s.n*8 {
			return f.truncated()
		}
		if f.err != nil {
			return f.err
		}
		if hdr&1 != 0 {
			return f.flush()
		}
	}
}

func (f *inflater) stored() error {
	f.bits(f.nb % 8)
	if f.nb < 32 {
		f.fill()
	}
	n := int(f.b & 0xffff)
	if uint16(f.b>>16) != ^uint16(n) {
		return f.corrupt("stored block length does not match its complement")
	}
	f.b >>= 32
	f.nb -= 32
	for n > 0 {
		if f.wp >= f.lim {
			if err := f.flush(); err != nil {
				return err
			}
		}
		k := min(n, f.lim-f.wp)
		// Bytes already in the bit buffer first, then the input.
		for f.nb >= 8 && k > 0 {
			f.win[f.wp] = byte(f.b)
			f.b >>= 8
			f.nb -= 8
			f.wp++
			k--
			n--
		}
		if f.nb == 0 {
			f.b = 0 // drop lookahead bits: input resumes at ip
		}
		for k > 0 {
			if f.ip >= len(f.in) {
				f.more()
				if f.pad > 0 {
					return f.truncated()
				}
				if f.err != nil {
					return f.err
				}
			}
			c := copy(f.win[f.wp:f.wp+k], f.in[f.ip:])
			f.ip += c
			f.wp += c
			k -= c
			n -= c
		}
	}
	return nil
}

func (f *inflater) dynamic() error {
	nlit := int(f.bits(5)) + 257
	ndist := int(f.bits(5)) + 1
	nclen := int(f.bits(4)) + 4
	if nlit > 286 || ndist > 30 {
		return f.corrupt("too many length or distance codes")
	}
	var cl [19]uint8
	for i := 0; i < nclen; i++ {
		cl[codeOrder[i]] = uint8(f.bits(3))
	}
	if !f.ct.build(cl[:], 7) {
		return f.corrupt("invalid code length code")
	}
	lens := f.lens[:nlit+ndist]
	for i := 0; i < len(lens); {
		s, err := f.sym(&f.ct)
		if err != nil {
			return err
		}
		if s < 16 {
			lens[i] = uint8(s)
			i++
			continue
		}
		var rep int
		var v uint8
		switch s {
		case 16:
			if i == 0 {
				return f.corrupt("repeated code length with no previous one")
			}
			rep, v = 3+int(f.bits(2)), lens[i-1]
		case 17:
			rep = 3 + int(f.bits(3))
		default:
			rep = 11 + int(f.bits(7))
		}
		if i+rep > len(lens) {
			return f.corrupt("code lengths overflow")
		}
		for ; rep > 0; rep-- {
			lens[i] = v
			i++
		}
	}
	if !f.lt.build(lens[:nlit], litBits) || !f.dt.build(lens[nlit:], distBits) {
		return f.corrupt("invalid literal/length or distance code")
	}
	return nil
}

// huffman decodes one block's symbols with lt and dt. The hot loop keeps
// the bit buffer and positions in locals, writing them back around every
// call that needs them.
func (f *inflater) huffman(lt, dt *huffTable) error {
	b, nb := f.b, f.nb
	in, ip := f.in, f.ip
	win, wp, lim := f.win, f.wp, f.lim
	ltab, lmask := lt.t, uint64(1)<<lt.prim-1 // for the second literal
	save := func() { f.b, f.nb, f.in, f.ip, f.wp = b, nb, in, ip, wp }
	for {
		if wp >= lim {
			save()
			if err := f.flush(); err != nil {
				return err
			}
			wp, lim = f.wp, f.lim
		}
		if nb < 48 {
			if len(in)-ip >= 8 {
				b |= binary.LittleEndian.Uint64(in[ip:]) << nb
				k := (63 - nb) >> 3
				ip += int(k)
				nb += k << 3
			} else {
				save()
				f.fill()
				if f.err != nil {
					return f.err
				}
				b, nb, in, ip = f.b, f.nb, f.in, f.ip
			}
		}
		e := lt.entry(b)
		n := uint(e & 31)
		if n == 0 {
			save()
			return f.corrupt("invalid literal/length code")
		}
		b >>= n
		nb -= n
		s := e >> 16
		if s < 256 {
			win[wp] = byte(s)
			wp++
			// A second literal without the checks above: at least
			// 48 bits were there and a literal takes at most 15,
			// and wp was below lim, which leaves maxMatch bytes.
			if e = ltab[b&lmask]; e&huffLink == 0 && e>>16 < 256 && e&31 != 0 {
				n = uint(e & 31)
				b >>= n
				nb -= n
				win[wp] = byte(e >> 16)
				wp++
			}
			continue
		}
		if s == 256 {
			save()
			return nil
		}
		s -= 257
		if s >= 29 {
			save()
			return f.corrupt("invalid length symbol")
		}
		x := uint(lenExtra[s])
		length := int(lenBase[s]) + int(b&(1<<x-1))
		b >>= x
		nb -= x
		e = dt.entry(b)
		n = uint(e & 31)
		if n == 0 {
			save()
			return f.corrupt("invalid distance code")
		}
		b >>= n
		nb -= n
		d := e >> 16
		if d >= 30 {
			save()
			return f.corrupt("invalid distance symbol")
		}
		x = uint(distExtra[d])
		dist := int(distBase[d]) + int(b&(1<<x-1))
		b >>= x
		nb -= x
		if dist > wp {
			save()
			return f.corrupt("distance reaches before the start of the output")
		}
		from := wp - dist
		if dist >= length {
			copy(win[wp:wp+length], win[from:from+length])
			wp += length
			continue
		}
		// Overlapping: the copy repeats the last dist bytes. Doubling
		// copies keep it to a few calls.
		end := wp + length
		for wp < end {
			wp += copy(win[wp:end], win[from:wp])
		}
	}
}

// inflateZlib decompresses the zlib stream of s into dst, whose length is
// the declared size, checking the stream's length and Adler-32 sum. With
// interval > 0 it returns the checkpoints it recorded.
func inflateZlib(s inflateSrc, dst []byte, interval int64) (*inflateIndex, error) {
	var hdr [2]byte
	if s.n < 6 {
		return nil, fmt.Errorf("%w: section %s at offset %#x: zlib stream of %d bytes", ErrMalformed, s.name, s.secOff, s.n)
	}
	if _, err := s.src.ReadAt(hdr[:], s.off); err != nil {
		return nil, fmt.Errorf("%w: section %s at offset %#x: %v", ErrMalformed, s.name, s.secOff, err)
	}
	if hdr[0]&15 != 8 || hdr[0]>>4 > 7 || (uint(hdr[0])<<8|uint(hdr[1]))%31 != 0 {
		return nil, fmt.Errorf("%w: section %s at offset %#x: not a zlib stream (header %#02x %#02x)", ErrMalformed, s.name, s.secOff, hdr[0], hdr[1])
	}
	if hdr[1]&0x20 != 0 {
		return nil, fmt.Errorf("%w: section %s at offset %#x: zlib stream needs a preset dictionary", ErrMalformed, s.name, s.secOff)
	}
	raw := s
	raw.off, raw.n = s.off+2, s.n-2
	ix, end, sum, err := inflateFull(raw, dst, interval)
	if err != nil {
		return nil, err
	}
	var tr [4]byte
	if end+4 > raw.n {
		return nil, fmt.Errorf("%w: section %s at offset %#x: zlib stream: checksum missing", ErrMalformed, s.name, s.secOff)
	}
	if _, err := s.src.ReadAt(tr[:], raw.off+end); err != nil {
		return nil, fmt.Errorf("%w: section %s at offset %#x: %v", ErrMalformed, s.name, s.secOff, err)
	}
	if want := binary.BigEndian.Uint32(tr[:]); want != sum {
		return nil, fmt.Errorf("%w: section %s at offset %#x: zlib stream: Adler-32 %#08x, stream says %#08x", ErrMalformed, s.name, s.secOff, sum, want)
	}
	return ix, nil
}

// inflateFull decompresses the raw deflate stream of s into dst, which it
// must fill exactly, and returns the checkpoints (with interval > 0), the
// stream's length in bytes and the Adler-32 of the output.
func inflateFull(s inflateSrc, dst []byte, interval int64) (ix *inflateIndex, end int64, sum uint32, err error) {
	f := inflaters.Get().(*inflater)
	defer inflaters.Put(f)
	ix = &inflateIndex{inflateSrc: s, size: int64(len(dst))}
	f.dst, f.lo, f.hi, f.full = dst, 0, int64(len(dst)), true
	if f.sum == nil {
		f.sum = adler32.New()
	}
	f.sum.Reset()
	f.onCp = nil
	if interval > 0 {
		f.onCp = func(bit, out int64) {
			ix.bounds = append(ix.bounds, inflateCheckpoint{bit, out})
		}
	}
	f.start(s, 0)
	f.setOutput(0, nil)
	err = f.run()
	f.dst, f.onCp = nil, nil
	if err != nil {
		return nil, 0, 0, err
	}
	if out := f.base + int64(f.wp); out != int64(len(dst)) {
		return nil, 0, 0, fmt.Errorf("%w: section %s at offset %#x: decompresses to %d bytes, header says %d", ErrMalformed, s.name, s.secOff, out, len(dst))
	}
	if interval > 0 {
		// One checkpoint every interval bytes of output or so:
		// the first block boundary at least interval past the last.
		last := int64(0)
		for _, b := range ix.bounds {
			if b.out-last >= interval {
				ix.cps = append(ix.cps, b)
				last = b.out
			}
		}
		// Their windows are kept (deflated) only when the output
		// is first given back (keepWindows): most sections move
		// the checkpoints first (retarget), which keeps its own.
		ix.cps = slices.Clip(ix.cps)
	}
	return ix, (f.bitPos() + 7) / 8, f.sum.Sum32(), nil
}

// keepWindows keeps the windows of the checkpoints, from out, the whole
// output, unless they are kept already: a fill needs them, so the output
// must not be given back before. Deflating them is a tenth of loading a
// section, so it waits until then (for .debug_info and .debug_line,
// retarget keeps the windows of the checkpoints it places, and
// inflateFull's evenly spaced ones were deflated for nothing). Should
// deflating fail (only a failing writer could), the checkpoints go:
// fills then decode from the stream's start, slower but right.
func (ix *inflateIndex) keepWindows(out []byte) {
	if ix == nil || ix.zoff != nil || len(ix.cps) == 0 {
		return
	}
	if ix.copyWindows(out) != nil {
		ix.cps, ix.zwin, ix.zoff = nil, nil, nil
	}
	ix.bounds = nil // the checkpoints stay where they are (retarget needs out)
}

// copyWindows keeps the window of every checkpoint, deflated, from out,
// the whole output.
func (ix *inflateIndex) copyWindows(out []byte) error {
	ix.zwin, ix.zoff = nil, nil
	if len(ix.cps) == 0 {
		return nil
	}
	var buf bytes.Buffer
	// One writer at a time, reused: each holds 0.8 MB of heap, and the
	// sections load concurrently, while they are whole (the load's
	// peak): a writer per call raised it by 2 MB.
	windowWriterMu.Lock()
	defer windowWriterMu.Unlock()
	w, _ := windowWriters.Get().(*flate.Writer)
	if w == nil {
		var err error
		if w, err = flate.NewWriter(&buf, flate.BestSpeed); err != nil {
			return err
		}
	}
	defer windowWriters.Put(w)
	zoff := make([]uint32, 0, len(ix.cps)+1)
	for _, cp := range ix.cps {
		zoff = append(zoff, uint32(buf.Len()))
		w.Reset(&buf)
		if _, err := w.Write(out[max(0, cp.out-inflateWindow):cp.out]); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		if uint64(buf.Len()) > 1<<32-1 {
			return errors.New("checkpoint windows of more than 4 GiB")
		}
	}
	ix.zoff = append(zoff, uint32(buf.Len()))
	ix.zwin = slices.Clip(bytes.Clone(buf.Bytes()))
	return nil
}

// windowWriters holds the deflater of checkpoint windows between uses,
// windowWriterMu lets one be used at a time.
var (
	windowWriters  sync.Pool
	windowWriterMu sync.Mutex
)

// windowReaders are the inflaters of checkpoint windows (flate.Resetter).
var windowReaders sync.Pool

// window inflates checkpoint k's window into buf, which must hold 32 KiB,
// and returns it.
func (ix *inflateIndex) window(k int, buf []byte) ([]byte, error) {
	if ix.zoff == nil {
		return nil, fmt.Errorf("checkpoint window %d of section %s: not kept (output given back before keepWindows)", k, ix.name)
	}
	n := int(min(ix.cps[k].out, inflateWindow))
	src := bytes.NewReader(ix.zwin[ix.zoff[k]:ix.zoff[k+1]])
	r, _ := windowReaders.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReader(src)
	} else if err := r.(flate.Resetter).Reset(src, nil); err != nil {
		return nil, err
	}
	defer windowReaders.Put(r)
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		return nil, fmt.Errorf("checkpoint window %d of section %s: %w", k, ix.name, err)
	}
	return buf[:n], nil
}

// retarget moves the checkpoints, as many as there are, to the block
// boundaries that bring them closest before targets, the offsets where
// fills will start (the units of .debug_info, the line programs), and
// takes their windows from out, which must still hold the whole output.
// Evenly spaced checkpoints leave a fill on average half an interval to
// decode before its start; placed by the units they leave less for the
// same memory. The choice is greedy (placeGreedy) unless that would take
// too long (a binary with gigabytes of DWARF), then linear (placeSpaced).
func (ix *inflateIndex) retarget(out []byte, targets []int) {
	n := len(ix.cps)
	if n == 0 || len(ix.bounds) <= n || len(targets) == 0 {
		ix.bounds = nil
		return
	}
	targets = slices.Sorted(slices.Values(targets))
	var cps []inflateCheckpoint
	if retargetGreedy(n, len(ix.bounds), len(targets)) {
		cps = ix.placeGreedy(n, targets)
	} else {
		cps = ix.placeSpaced(n, targets)
	}
	slices.SortFunc(cps, func(a, b inflateCheckpoint) int { return int(a.out - b.out) })
	old, zwin, zoff := ix.cps, ix.zwin, ix.zoff
	ix.cps = cps
	if ix.copyWindows(out) != nil {
		// Only a failing writer gets here: keep the evenly spaced
		// checkpoints, and their windows if they were kept.
		ix.cps, ix.zwin, ix.zoff = old, zwin, zoff
	}
	ix.bounds = nil
}

// retargetWork bounds the greedy placement's work (checkpoints x
// boundaries x targets): about 4 million for the Go compiler's
// .debug_info (40 x 500 x 215), but a binary with gigabytes of DWARF has
// thousands of each, and the greedy choice would take hours.
var retargetWork int64 = 1 << 28

// retargetGreedy reports whether retarget places n checkpoints among
// bounds block boundaries for targets greedily (else placeSpaced).
func retargetGreedy(n, bounds, targets int) bool {
	return int64(n)*int64(bounds)*int64(targets) <= retargetWork
}

// placeSpaced chooses up to n checkpoints in linear time: walking the
// targets in order, the last block boundary at or before a target, once
// the target is an n-th of the output past the previous checkpoint. A
// fill then decodes from at most that far before its target plus the
// distance from the target before it to its boundary, as evenly spaced
// checkpoints would, but starting at boundaries next to targets.
func (ix *inflateIndex) placeSpaced(n int, targets []int) []inflateCheckpoint {
	interval := max(ix.size/int64(n), 1)
	var cps []inflateCheckpoint
	last := int64(0)
	for _, t := range targets {
		if len(cps) == n {
			break
		}
		if int64(t)-last < interval {
			continue
		}
		// The last boundary at or before t.
		j := sort.Search(len(ix.bounds), func(j int) bool { return ix.bounds[j].out > int64(t) }) - 1
		if j < 0 || ix.bounds[j].out <= last {
			continue
		}
		cps = append(cps, ix.bounds[j])
		last = ix.bounds[j].out
	}
	return cps
}

// placeGreedy chooses n checkpoints among the block boundaries one at a
// time, each where it most reduces the total distance from the targets
// back to the checkpoint before them.
func (ix *inflateIndex) placeGreedy(n int, targets []int) []inflateCheckpoint {
	from := make([]int64, len(targets)) // where a fill of each target would start
	used := make([]bool, len(ix.bounds))
	var cps []inflateCheckpoint
	for range n {
		best, bestGain := -1, int64(0)
		for j, b := range ix.bounds {
			if used[j] {
				continue
			}
			gain := int64(0)
			for k := sort.SearchInts(targets, int(b.out)); k < len(targets); k++ {
				if from[k] < b.out {
					gain += b.out - from[k]
				}
			}
			if gain > bestGain {
				best, bestGain = j, gain
			}
		}
		if best < 0 {
			break
		}
		used[best] = true
		b := ix.bounds[best]
		cps = append(cps, b)
		for k := sort.SearchInts(targets, int(b.out)); k < len(targets); k++ {
			from[k] = max(from[k], b.out)
		}
	}
	return cps
}

// maxGap returns the most output between two checkpoints, or between a
// checkpoint and either end: what a fill may decode before its range.
func (ix *inflateIndex) maxGap() int64 {
	gap, last := int64(0), int64(0)
	for _, cp := range ix.cps {
		gap, last = max(gap, cp.out-last), cp.out
	}
	return max(gap, ix.size-last)
}

// release frees the checkpoints' windows.
func (ix *inflateIndex) release() {
	if ix == nil {
		return
	}
	ix.cps, ix.zwin, ix.zoff = nil, nil, nil
}

// fill decompresses output bytes [lo, hi) again into dst[lo:hi] (dst is
// the whole output), starting at the last checkpoint at or before lo.
// Nothing outside [lo, hi) is written.
func (ix *inflateIndex) fill(dst []byte, lo, hi int) error {
	if lo < 0 || hi > len(dst) || int64(len(dst)) != ix.size || lo > hi {
		return fmt.Errorf("%w: section %s at offset %#x: fill [%d, %d) of %d bytes", ErrMalformed, ix.name, ix.secOff, lo, hi, ix.size)
	}
	if lo == hi {
		return nil
	}
	// The last checkpoint at or before lo; the stream's start is one.
	k := ix.before(int64(lo))
	var cp inflateCheckpoint
	var window []byte
	f := inflaters.Get().(*inflater)
	defer inflaters.Put(f)
	if k > 0 {
		cp = ix.cps[k-1]
		var err error
		// Into the sliding buffer, where setOutput copies it
		// (copy of overlapping equal ranges: nothing moves).
		if window, err = ix.window(k-1, f.win); err != nil {
			return err
		}
	}
	f.dst, f.lo, f.hi, f.full = dst, int64(lo), int64(hi), false
	f.onCp = nil
	f.start(ix.inflateSrc, cp.bit)
	f.setOutput(cp.out, window)
	err := f.run()
	f.dst = nil
	if err == errInflateStop {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("%w: section %s at offset %#x: deflate stream ends before output byte %d", ErrMalformed, ix.name, ix.secOff, hi)
	}
	return err
}

// around returns the extent [a, b) a fill of [lo, hi) decodes anyway, or
// nearly: from the last checkpoint at or before lo to the first after hi
// (or the end).
func (ix *inflateIndex) around(lo, hi int) (a, b int) {
	k := ix.before(int64(lo))
	if k > 0 {
		a = int(ix.cps[k-1].out)
	}
	b = int(ix.size)
	for _, cp := range ix.cps[k:] {
		if cp.out >= int64(hi) {
			b = int(cp.out)
			break
		}
	}
	return a, b
}

// before returns how many checkpoints lie at or before output offset off:
// a fill from off resumes at cps[k-1], or at the stream's start for 0.
func (ix *inflateIndex) before(off int64) int {
	return sort.Search(len(ix.cps), func(i int) bool { return ix.cps[i].out > off })
}
