package perfdata

import (
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// zstd windows are bounded so that a hostile frame header cannot make the
// decoder allocate more than a real perf file needs: perf record -z levels
// up to 19 use at most an 8 MiB window; the --ultra levels 20..22 would need
// up to 128 MiB and are refused (docs/perfdata.md).
const maxZstdWindow = 8 << 20

// zstream decompresses the COMPRESSED/COMPRESSED2 records of one input. perf
// writes one continuous zstd stream per data file, cut into records at
// arbitrary points (zstd_compress_stream_to_records in tools/perf/util/zstd.c),
// and expands each record right after reading it, carrying a partial record
// over to the next chunk (perf_session__process_compressed_event).
//
// The zstd decoder pulls its input through feeder. When it needs bytes past
// the current compressed record it reads the following records of the input
// itself: compressed ones feed it, others are kept (stash) and delivered
// before the output that needed the extra input, which is where perf would
// have delivered them.
type zstream struct {
	s   *stream
	dec *zstd.Decoder

	in     []byte // the current compressed payload (a copy)
	inPos  int
	recOff int64 // offset of the compressed record the input came from

	out        []byte // decompressed bytes; out[start:end] not yet parsed
	start, end int

	stash    []rawRecord // records read past while feeding, in order
	stashBuf []byte
	stashPos int

	feedErr error // an error from reading the input while feeding

	// budget is how many more decompressed bytes the compressed records
	// fed so far justify (see maxExpansion).
	budget int64
}

// maxExpansion bounds how much one byte of compressed data may expand to.
// perf data compresses 5 to 30 times; a zstd "bomb" (long runs of RLE
// blocks) expands 30000 times and would make a small file cost gigabytes
// of decoding. perf's own reader stops at its mmap_len buffer.
const (
	maxExpansion = 1024
	minBudget    = 1 << 20
)

type zfeeder struct{ z *zstream }

// Read gives the decoder the rest of the current compressed payload, then
// pulls the next compressed record from the input.
func (f zfeeder) Read(p []byte) (int, error) {
	z := f.z
	for z.inPos == len(z.in) {
		rec, err := z.s.nextOuter()
		if err != nil {
			if err != io.EOF {
				z.feedErr = err
			}
			return 0, err
		}
		data0 := rec.data
		// Keep a copy: the input buffer moves on. A compressed record is
		// kept too (its header: the record itself is delivered, its data
		// feeds the decoder), so that every record of the input is seen.
		data := rec.data
		compressed := rec.typ == RecordCompressed || rec.typ == RecordCompressed2
		if compressed {
			data = data[:min(len(data), 16)]
		}
		if len(z.stash) == 0 {
			z.stashBuf = z.stashBuf[:0]
		}
		at := len(z.stashBuf)
		z.stashBuf = append(z.stashBuf, data...)
		rec.data = z.stashBuf[at:len(z.stashBuf):len(z.stashBuf)]
		// The copy is what the record is now: the ordered queue must
		// not keep it as a position in the stream's chunk, which the
		// stream may have moved on from (and compacted) meanwhile.
		rec.stable = false
		z.stash = append(z.stash, rec)
		if compressed {
			if err := z.setInput(rec, data0); err != nil {
				z.feedErr = err
				return 0, err
			}
		}
	}
	n := copy(p, z.in[z.inPos:])
	z.inPos += n
	return n, nil
}

func newZstream(s *stream) (*zstream, error) {
	z := &zstream{s: s}
	dec, err := zstd.NewReader(zfeeder{z},
		zstd.WithDecoderConcurrency(1), // synchronous: reads input only when it must
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxZstdWindow))
	if err != nil {
		return nil, err
	}
	z.dec = dec
	return z, nil
}

// setInput makes the zstd data of the compressed record rec (whole bytes
// in full) the decoder's next input.
func (z *zstream) setInput(rec rawRecord, full []byte) error {
	var data []byte
	if rec.typ == RecordCompressed {
		data = full[8:]
	} else {
		if len(full) < 16 {
			return z.s.formatErr(rec.off, ErrMalformed, "COMPRESSED2 record of %d bytes has no data_size", len(full))
		}
		ds := z.s.order.Uint64(full[8:])
		if ds > uint64(len(full)-16) {
			return z.s.formatErr(rec.off, ErrMalformed, "COMPRESSED2 data_size %d exceeds the record's %d bytes", ds, len(full)-16)
		}
		data = full[16 : 16+ds]
	}
	z.in = append(z.in[:0], data...)
	z.inPos = 0
	z.recOff = rec.off
	z.budget += max(minBudget, maxExpansion*int64(len(data)))
	return nil
}

// startDecompress is called for each compressed record read from the input.
func (s *stream) startDecompress(rec rawRecord) error {
	if s.z == nil {
		z, err := newZstream(s)
		if err != nil {
			return err
		}
		s.z = z
	}
	if s.z.inPos < len(s.z.in) {
		// Cannot happen: next drains the input before reading on.
		return s.formatErr(rec.off, ErrMalformed, "compressed record before the previous one was used")
	}
	return s.z.setInput(rec, rec.data)
}

// next returns the next record from the decompressed data; ok is false
// when the current compressed input is used up and no whole record is left.
func (z *zstream) next() (rawRecord, bool, error) {
	for {
		if z.stashPos < len(z.stash) {
			rec := z.stash[z.stashPos]
			z.stashPos++
			if z.stashPos == len(z.stash) {
				z.stash, z.stashPos = z.stash[:0], 0
				// stashBuf is reset by the next append, after this
				// record's use.
			}
			return rec, true, nil
		}
		if rec, ok, err := z.parse(); ok || err != nil {
			return rec, ok, err
		}
		if z.inPos == len(z.in) {
			return rawRecord{}, false, nil
		}
		if err := z.read(); err != nil {
			return rawRecord{}, false, err
		}
	}
}

// parse returns the next whole record in out, if there is one.
func (z *zstream) parse() (rawRecord, bool, error) {
	avail := z.end - z.start
	if avail < 8 {
		return rawRecord{}, false, nil
	}
	typ, misc, size16 := z.s.header(z.out[z.start : z.start+8])
	size := int(size16)
	if size < 8 {
		return rawRecord{}, false, z.s.formatErr(z.recOff, ErrMalformed, "in compressed data: %v record size %d is smaller than its 8-byte header", typ, size)
	}
	if typ == RecordCompressed || typ == RecordCompressed2 {
		return rawRecord{}, false, z.s.formatErr(z.recOff, ErrMalformed, "in compressed data: a compressed record inside compressed data")
	}
	if typ == RecordAuxtrace || typ == RecordTracingData {
		// perf record never compresses these (their payloads follow
		// header.size); perf's reader would mis-step over them too.
		return rawRecord{}, false, z.s.formatErr(z.recOff, ErrMalformed, "in compressed data: %v record is not supported inside compressed data", typ)
	}
	if avail < size {
		return rawRecord{}, false, nil
	}
	rec := rawRecord{
		typ: typ, misc: misc, size: size16,
		data: z.out[z.start : z.start+size : z.start+size],
		off:  z.recOff, compressed: true, part: z.s.part,
	}
	z.start += size
	return rec, true, nil
}

// read decompresses the next block into out.
func (z *zstream) read() error {
	// Keep the partial record at the front and leave room for a whole
	// zstd block (128 KiB), so that each Read hands over a whole block
	// and the decoder keeps no output back.
	const room = 128<<10 + 1<<10
	if z.start > 0 {
		copy(z.out, z.out[z.start:z.end])
		z.end -= z.start
		z.start = 0
	}
	if len(z.out)-z.end < room {
		nb := make([]byte, z.end+room+len(z.out)/2)
		copy(nb, z.out[:z.end])
		z.out = nb
	}
	n, err := z.dec.Read(z.out[z.end:])
	z.end += n
	if z.budget -= int64(n); z.budget < 0 {
		return z.s.formatErr(z.recOff, ErrMalformed, "compressed data expands more than %d times: not a perf recording", maxExpansion)
	}
	if err != nil {
		if z.feedErr != nil {
			return z.feedErr
		}
		if err == io.EOF {
			// The input ended at a frame boundary.
			z.in, z.inPos = z.in[:0], 0
			return nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// The input itself ended cleanly (a failed read would have
			// set feedErr) while the decoder wanted more for an
			// incomplete record: see dropTail.
			z.in, z.inPos = z.in[:0], 0
			return z.dropTail()
		}
		return z.s.formatErr(z.recOff, ErrMalformed, "zstd: %v", err)
	}
	return nil
}

// finish is called when the input has ended cleanly; a partial record left
// in the decompressed data is dropped with a warning (dropTail).
func (z *zstream) finish() error { return z.dropTail() }

// dropTail handles a compressed stream that ends inside a record while every
// record of the input around it is whole. perf 6.1's writer produces this:
// on a large `perf record -z` recording its last COMPRESSED record is clipped
// at 65535 bytes, the largest header.size, and the zstd stream is never
// ended (bench/README.md has the recording). perf's reader keeps the bytes
// as a partial record that never completes and says nothing. We drop them
// too, since every whole record before them is sound, but say so.
func (z *zstream) dropTail() error {
	left := z.end - z.start
	if left == 0 {
		return nil
	}
	what := "an incomplete record"
	if left >= 8 {
		h := z.out[z.start:]
		what = fmt.Sprintf("an incomplete %v record of %d bytes", RecordType(z.s.order.Uint32(h)), z.s.order.Uint16(h[6:]))
	}
	if z.s.warn != nil {
		z.s.warn(fmt.Sprintf("the compressed data that ends with the record at offset %d stops inside a record: the last %d decompressed bytes (%s) are dropped, as perf does", z.recOff, left, what))
	}
	z.start = z.end
	return nil
}
